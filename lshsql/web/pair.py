"""`/pair?u=URL&v=URL`: why two URLs were paired, or not (`lshsql explain U V`'s evidence), and their two
stored pages or documents side by side with the words that differ marked."""

from __future__ import annotations

import difflib
import re

from lshsql.errors import InputError, ParamError
from lshsql.tools import dedup_explain, explain
from lshsql.web import layout, text
from lshsql.web.layout import BadRequest, NotFound, esc
from lshsql.web.site import Site, connect

MAX_WORDS = 5000  # words of each text compared; a longer text is cut, and says so
_TOKEN = re.compile(r"\S+")


def render(site: Site, query: dict[str, list[str]]) -> tuple[str, str]:
    """The title and body of the page comparing two URLs."""
    u, v = layout.one(query, "u"), layout.one(query, "v")
    if not u or not v:
        raise BadRequest("give two URLs: /pair?u=URL&v=URL")
    try:
        if site.is_dedup:
            evidence = dedup_explain.explain_pair(site.work, u, v, site.resources)
            facts = _dedup_facts(evidence)
        else:
            evidence = explain.explain_pair(site.work, u, v, site.resources)
            facts = _crawl_facts(evidence)
    except ParamError as e:
        raise BadRequest(str(e)) from None
    except InputError as e:
        raise NotFound(str(e)) from None
    u, v = evidence["u"], evidence["v"]
    left, right = _text(site, u), _text(site, v)
    body = [
        "<h1>Two URLs compared</h1>",
        '<dl class="facts">',
        f'<dt>u</dt><dd><a href="{layout.url_page(u)}">{esc(u)}</a></dd>',
        f'<dt>v</dt><dd><a href="{layout.url_page(v)}">{esc(v)}</a></dd>',
        facts,
        "</dl>",
        "<h2>Side by side</h2>",
        '<p class="muted">Words only in u are marked <del>so</del>, words only in v <ins>so</ins>.</p>',
        _sides(left, right),
    ]
    return f"{u} and {v}", "\n".join(body)


def _crawl_facts(e: dict) -> str:
    verdict = (
        f"kept as a pair, similarity {e['similarity_kept']:.3f}"
        if e["similarity_kept"] is not None
        else ("a candidate, but below the threshold" if e["is_candidate"] else "never a candidate")
    )
    tables = e["tables_collided"]
    collided = "unknown" if tables is None else (", ".join(map(str, tables)) or "none")
    terms = "".join(
        f'<tr><td>{esc(term)}</td><td class="num">{c:.3f}</td><td class="num">{wu:.3f}</td>'
        f'<td class="num">{wv:.3f}</td></tr>'
        for term, c, wu, wv in e["shared_terms"]
    )
    anchors = "".join(
        f"<dt>anchor phrases for {esc(url)}</dt><dd>{'; '.join(f'{esc(t)} ({n})' for t, n in phrases)}</dd>"
        for url, phrases in e["anchors"].items()
        if phrases
    )
    return (
        f"<dt>verdict</dt><dd>{verdict}; {'same cluster' if e['same_cluster'] else 'different clusters'}</dd>"
        f"<dt>estimate</dt><dd>{e['agreeing']} of {e['num_perm']} min-hashes agree = {e['estimate']:.3f}</dd>"
        f"<dt>exact weighted Jaccard</dt><dd>{e['jaccard_flattened']:.3f} of the flattened bags (what the "
        f"estimate targets), {e['jaccard_weights']:.3f} of the real weights</dd>"
        f"<dt>LSH tables collided in</dt><dd>{collided}</dd>{anchors}"
        "<dt>shared terms</dt><dd><table><thead><tr><th>term</th><th class=num>min(weight u, weight v)</th>"
        "<th class=num>weight u</th><th class=num>weight v</th></tr></thead>"
        f"<tbody>{terms}</tbody></table></dd>"
    )


def _dedup_facts(e: dict) -> str:
    tables = e["tables_collided"]
    collided = "unknown" if tables is None else (", ".join(map(str, tables)) or "none")
    return (
        f"<dt>decided</dt><dd>u: {esc(e['decided'][0])}; v: {esc(e['decided'][1])}</dd>"
        f"<dt>shingles</dt><dd>{e['shared']:,} shared, {e['only'][0]:,} only in u, {e['only'][1]:,} only "
        f"in v: Jaccard {e['jaccard']:.3f} (threshold {e['threshold']})</dd>"
        f"<dt>estimate</dt><dd>{e['agreeing']} of {e['num_perm']} min-hashes agree = "
        f"{e['agreeing'] / e['num_perm']:.3f}</dd><dt>LSH tables collided in</dt><dd>{collided}</dd>"
    )


def _text(site: Site, url: str) -> str | InputError:
    """The member's text, or the error saying why there is none."""
    with connect(site) as con:
        rows = con.execute(
            "select record_type, content_type, source_file, source_offset from pages "
            "where url = $url and skip_reason is null order by record_id desc limit 1",
            {"url": url},
        ).fetchall()
    if not rows:
        return InputError("not fetched: a link target with no page stored")
    try:
        return text.read_text(site.work, text.Source(url, *rows[0]), site.resources)
    except InputError as e:
        return e


def marked(left: str, right: str) -> tuple[str, str]:
    """Both texts as HTML, the runs of words only in the left one in <del>, only in the right one in <ins>
    (a word-level diff, difflib's longest matching blocks, over the first MAX_WORDS words of each)."""
    a, b = _TOKEN.findall(left), _TOKEN.findall(right)
    cut_a, cut_b = len(a) > MAX_WORDS, len(b) > MAX_WORDS
    a, b = a[:MAX_WORDS], b[:MAX_WORDS]
    out_a, out_b = [], []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b).get_opcodes():
        if op == "equal":
            out_a.append(esc(" ".join(a[i1:i2])))
            out_b.append(esc(" ".join(b[j1:j2])))
            continue
        if i2 > i1:
            out_a.append(f"<del>{esc(' '.join(a[i1:i2]))}</del>")
        if j2 > j1:
            out_b.append(f"<ins>{esc(' '.join(b[j1:j2]))}</ins>")
    more = f' <span class="note">(cut after {MAX_WORDS:,} words)</span>'
    return " ".join(out_a) + (more if cut_a else ""), " ".join(out_b) + (more if cut_b else "")


def _sides(left: str | InputError, right: str | InputError) -> str:
    if isinstance(left, str) and isinstance(right, str):
        left_html, right_html = marked(left, right)
    else:
        left_html, right_html = (
            f'<span class="note">{esc(side)}</span>' if isinstance(side, InputError) else esc(side)
            for side in (left, right)
        )
    return f'<div class="sides"><div class="side">{left_html}</div><div class="side">{right_html}</div></div>'
