"""WARC and ARC files -> `Record`s: the framing of records (plain or gzip, a member per record or not),
parsing a record's WARC and HTTP headers with warcio, and the byte-level resync after a truncated or
broken record."""

from __future__ import annotations

import re
import zlib
from collections import deque
from collections.abc import Iterator

from lshsql.errors import InputError, one_line
from lshsql.sources.records import Record, http_skip_reason, redirect_location

SKIPPED_RECORD_TYPES = {
    "request",
    "revisit",
    "metadata",
    "warcinfo",
    "resource",
    "conversion",
    "continuation",
}
BLOCK = 2**16  # bytes of decompressed data handed out at a time
READ_BLOCK = 2**16  # bytes of a gzip file read at a time
FEED_BLOCK = 2**13  # bytes of gzip data decompressed at a time
MAX_LINE = 2**20  # a longer line is read in pieces
GZIP_MAGIC = b"\x1f\x8b\x08"
_PADDING = b" \t\r\n\x00"  # between records: blank lines, and NUL bytes some writers leave
_WARC_LINE = re.compile(rb"WARC/\d+\.\d+\s*")  # the first line of a WARC record
_ARC_LINE = re.compile(rb"\S.* \S+ \d{12,14} \S* \d+\s*")  # URL IP date type length


def iter_warc(path: str, max_bytes: int) -> Iterator[Record]:
    """Records of a WARC or ARC file, plain or gzip (a member per record, one for the whole file, or members
    cut anywhere: the members are read as one stream). A record is skipped whole, never used in part, as
    `truncated` when its bytes end before its Content-Length says: the file ends, or the next `WARC/1.x`
    header line starts inside it (reading goes on there). Bytes that are no readable record (a broken
    header, corrupt gzip data, junk between records) are one `read_error` per stretch, and reading goes on
    at the next gzip member and header line. A file that cannot be opened is an InputError."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed by the with below, after the last record
    except OSError as e:
        raise InputError(f"{path}: not a readable WARC/ARC file: {one_line(e, 200)}") from None
    with f:
        stream = _GzipStream(f) if f.read(2) == b"\x1f\x8b" else _Stream(f)
        yield from _framed_records(stream, path, max_bytes)


def _framed_records(stream: _Stream, path: str, max_bytes: int) -> Iterator[Record]:
    """Find each record's first line, read the record, and check it ends where its Content-Length says."""
    from warcio.recordloader import ArcWarcRecordLoader

    loader = ArcWarcRecordLoader(verify_http=False, arc2warc=True)
    fmt: str | None = None  # "warc" or "arc", from the first record
    broken = False  # the last record was a read_error: the junk after it is its own rest
    while True:
        scan_from = stream.tell()
        line, at, junk = _next_record_line(stream, fmt, scan_from)
        if junk is not None and not broken:
            yield _unreadable(path, junk)
        if not line:
            return
        fmt = fmt or ("warc" if _WARC_LINE.fullmatch(line) else "arc")
        stream.forget_before(at)
        record, resume_at = _framed_record(
            stream, loader, line, path, stream.offset(at, scan_from), max_bytes
        )
        broken = record.skip_reason == "read_error"
        yield record
        if resume_at is not None:
            stream.seek(resume_at)


def _next_record_line(stream: _Stream, fmt: str | None, scan_from: int) -> tuple[bytes, int, int | None]:
    """(the next record's first line or b"" at the end, its position, the source_offset of bytes before it
    that are no record or None); padding between records (blank lines, NUL bytes) is skipped."""
    junk = None
    while True:
        at = stream.tell()
        line = stream.readline()
        if not line:
            if not stream.at_break:
                return b"", at, junk
            junk = stream.break_offset(at, scan_from) if junk is None else junk
            if not stream.resume():
                return b"", at, junk
        elif _is_record_line(line, fmt):
            return line, at, junk
        elif junk is None and line.strip(_PADDING):
            junk = stream.offset(at, scan_from)


def _is_record_line(line: bytes, fmt: str | None) -> bool:
    if fmt != "arc" and _WARC_LINE.fullmatch(line):
        return True
    return fmt != "warc" and _ARC_LINE.fullmatch(line) is not None


def _unreadable(path: str, offset: int) -> Record:
    return Record(None, "unreadable", path, offset, skip_reason="read_error")


def _framed_record(
    stream: _Stream, loader, line: bytes, path: str, offset: int, max_bytes: int
) -> tuple[Record, int | None]:
    """The record starting with `line`, and where reading resumes when the next record's header line was
    found inside it (None: right after it)."""
    from warcio.exceptions import ArchiveLoadFailed
    from warcio.statusandheaders import StatusAndHeadersParserException

    try:
        rec = loader.parse_record_stream(stream, line, no_record_parse=True)
    except (ArchiveLoadFailed, StatusAndHeadersParserException, EOFError, ValueError):
        return _unreadable(path, offset), None
    length = rec.rec_headers.get_header("Content-Length")
    if not (length or "").strip().isdigit():  # cut inside its header, or its end cannot be found
        reason = "truncated" if stream.at_end() else "read_error"
        return _skipped(_warc_record(rec, None, path, offset, max_bytes), reason), None
    stream.watch(_WARC_LINE.fullmatch(line) is not None)
    record = _warc_record(rec, loader, path, offset, max_bytes)
    while rec.raw_stream.read(BLOCK):
        pass
    next_header = stream.unwatch()
    if rec.raw_stream.limit == 0 and (next_header is None or _ends_well(stream)):
        return record, None
    if next_header is not None:
        return _skipped(record, "truncated"), next_header
    return _skipped(record, "read_error" if stream.at_break else "truncated"), None


def _ends_well(stream: _Stream) -> bool:
    """Whether a record read to its Content-Length is followed by padding and the next record's first line,
    or by the end of the data (not by the rest of a record that is too long)."""
    line = stream.peek_line()
    return not line or _WARC_LINE.fullmatch(line) is not None


def _skipped(record: Record, reason: str) -> Record:
    return Record(**{**record.__dict__, "body": None, "location": None, "skip_reason": reason})


def _warc_record(rec, loader, path: str, offset: int, max_bytes: int) -> Record:
    """What a parsed record is: a page with its body (read up to max_bytes + 1) or a skip reason. Without
    a loader (a record whose end is unknown) only its WARC headers are read."""
    headers = rec.rec_headers
    url = headers.get_header("WARC-Target-URI")
    base = {
        "url": url,
        "record_type": rec.rec_type,
        "source_file": path,
        "source_offset": offset,
        "warc_date": headers.get_header("WARC-Date"),
    }
    if rec.rec_type != "response":
        reason = rec.rec_type if rec.rec_type in SKIPPED_RECORD_TYPES else "other_record_type"
        return Record(**base, skip_reason=reason)
    if loader is None:
        return Record(**base, skip_reason="read_error")
    http = _http_headers(rec, loader, url)
    if http is None:
        return Record(**base, skip_reason="no_http_headers")
    status = _status(http.get_statuscode())
    content_type = http.get_header("Content-Type")
    base.update(status=status, content_type=content_type)
    reason = http_skip_reason(status, content_type)
    if reason:
        return Record(
            **base, skip_reason=reason, location=redirect_location(status, http.get_header("Location"))
        )
    try:
        body = rec.content_stream().read(max_bytes + 1)
    except Exception:  # noqa: BLE001 - a body that cannot be decoded is counted, not fatal to the file
        return Record(**base, skip_reason="read_error")
    if len(body) > max_bytes:
        return Record(**base, n_bytes=len(body), skip_reason="too_large")
    return Record(**base, n_bytes=len(body), body=body)


def _http_headers(rec, loader, url: str | None):
    """The HTTP headers of a response record (set on it, for its content stream), None when it has none
    or they cannot be parsed."""
    from warcio.statusandheaders import StatusAndHeadersParserException

    try:
        rec.http_headers = loader.load_http_headers("response", url or "", rec.raw_stream, rec.length)
    except (StatusAndHeadersParserException, EOFError, ValueError):
        rec.http_headers = None
    return rec.http_headers


class _Stream:
    """An uncompressed crawl file as one stream for warcio's record loader: read, readline (at most
    MAX_LINE bytes), tell, and seek back. While `watch`ing, the first line start with `WARC/` read is
    noted, the candidate header of a next record inside a record that turns out too short."""

    at_break = False  # the data stopped at corrupt gzip data (`resume` goes on after it)

    def __init__(self, f) -> None:
        self.f = f
        self.buf = b""
        self.i = 0  # read position in buf
        self.buf_at = 0  # stream position of buf[0]
        self._tail: bytes | None = None  # while watching: the last bytes read
        self._found: int | None = None
        f.seek(0)

    def tell(self) -> int:
        return self.buf_at + self.i

    def read(self, n: int | None = None) -> bytes:
        n = BLOCK if n is None or n < 0 else n
        parts = []
        while n > 0 and (self.i < len(self.buf) or self._refill()):
            part = self.buf[self.i : self.i + n]
            self.i += len(part)
            n -= len(part)
            parts.append(part)
        return self._seen(b"".join(parts))

    def readline(self, limit: int | None = None) -> bytes:
        n = MAX_LINE if limit is None or limit < 0 else min(limit, MAX_LINE)
        parts = []
        while n > 0 and (self.i < len(self.buf) or self._refill()):
            end = self.buf.find(b"\n", self.i, self.i + n)
            stop = end + 1 if end >= 0 else min(len(self.buf), self.i + n)
            parts.append(self.buf[self.i : stop])
            n -= stop - self.i
            self.i = stop
            if end >= 0:
                break
        return self._seen(b"".join(parts))

    def seek(self, pos: int) -> None:
        self.f.seek(pos)
        self.buf, self.i, self.buf_at = b"", 0, pos

    def at_end(self) -> bool:
        """Whether only padding is left (the end of the file, not a break)."""
        return not self.peek_line() and not self.at_break

    def peek_line(self) -> bytes:
        """The next line after padding, without reading it; b"" at the end of the data."""
        while True:
            rest = self.buf[self.i :]
            line = rest.lstrip(_PADDING)
            end = line.find(b"\n")
            if end >= 0 or len(line) >= MAX_LINE:
                return line[: end + 1 if end >= 0 else MAX_LINE]
            more = b"" if self.at_break else self._more()
            if not more:
                return line
            self.buf, self.i, self.buf_at = rest + more, 0, self.buf_at + self.i

    def resume(self) -> bool:
        return False

    def offset(self, at: int, scan_from: int) -> int:
        """The source_offset of a record whose first line is at `at` (padding from `scan_from` on)."""
        return at

    def break_offset(self, at: int, scan_from: int) -> int:
        """The source_offset of the data lost at a break at `at`."""
        return self.offset(at, scan_from)

    def forget_before(self, pos: int) -> None:
        """Nothing before pos will be sought again."""

    def watch(self, on: bool) -> None:
        self._tail, self._found = (b"\n" if on else None), None

    def unwatch(self) -> int | None:
        """Stop watching; the position of the first line start with `WARC/` read since `watch`, or None."""
        found, self._tail, self._found = self._found, None, None
        return found

    def _seen(self, data: bytes) -> bytes:
        if self._tail is not None and data:
            seen = self._tail + data
            k = seen.find(b"\nWARC/")
            if k >= 0:
                self._found = self.tell() - len(seen) + k + 1
                self._tail = None
            else:
                self._tail = seen[-5:]
        return data

    def _refill(self) -> bool:
        if self.at_break:
            return False
        data = self._more()
        if not data:
            return False
        self.buf_at += len(self.buf)
        self.buf, self.i = data, 0
        return True

    def _more(self) -> bytes:
        return self.f.read(BLOCK)


class _GzipStream(_Stream):
    """The decompressed bytes of a gzip file's members, one after the other, as one stream. Corrupt gzip
    data stops the stream (`at_break`); `resume` goes on at the next gzip member that decompresses."""

    def __init__(self, f) -> None:
        super().__init__(f)
        self.raw = b""  # compressed bytes read from the file and not yet decompressed
        self.raw_at = 0  # file offset of raw[0]
        self.d = None  # the decompressor of the current member
        self.member_at = 0  # file offset of the current member
        self.member_start = 0  # its stream position
        self.broken = (0, 0)  # (stream position, file offset) of the last member with corrupt data
        self.members: deque[tuple[int, int]] = deque()  # (stream position, file offset) of members
        self.next_member: int | None = None  # after a break: where the next good member starts

    def seek(self, pos: int) -> None:
        """Back to a position read before: decompress again from the member that holds it."""
        start, member = next((m for m in reversed(self.members) if m[0] <= pos), (0, 0))
        self.f.seek(member)
        self.raw, self.raw_at, self.d, self.at_break = b"", member, None, False
        self.buf, self.i, self.buf_at = b"", 0, start
        while self.tell() < pos and self.read(min(BLOCK, pos - self.tell())):
            pass

    def resume(self) -> bool:
        if not self.at_break or self.next_member is None:
            return False
        self.f.seek(self.next_member)
        self.raw, self.raw_at, self.next_member, self.at_break = b"", self.next_member, None, False
        return True

    def offset(self, at: int, scan_from: int) -> int:
        """A record that starts a gzip member (after padding): the member's offset in the file, where a
        reader can start decompressing; a record inside a member: its position in the decompressed
        stream."""
        for start, member in reversed(self.members):
            if start <= at:
                return member if start >= scan_from else at
        return at

    def break_offset(self, at: int, scan_from: int) -> int:
        """The corrupt member's offset in the file when it starts after the last record, else `at`."""
        start, member = self.broken
        return member if start >= scan_from else at

    def forget_before(self, pos: int) -> None:
        while len(self.members) > 1 and self.members[1][0] <= pos:
            self.members.popleft()

    def _more(self) -> bytes:
        while True:
            if self.d is None and not self._start_member():
                return b""
            if not self.raw and not self._read_raw():
                data = self.d.decompress(b"", BLOCK)  # the file ends inside the member: what it holds
                self.d = None
                return data
            feed = self.raw[:FEED_BLOCK]  # small pieces: corrupt data loses little of what came before it
            try:
                data = self.d.decompress(feed, BLOCK)
            except zlib.error:
                self._break(self.member_at + 1)
                return b""
            consumed = len(feed) - len(self.d.unused_data if self.d.eof else self.d.unconsumed_tail)
            self.raw, self.raw_at = self.raw[consumed:], self.raw_at + consumed
            if self.d.eof:
                self.d = None
            if data:
                return data

    def _start_member(self) -> bool:
        """At the next gzip member (after padding); False at the end of the file or at a break."""
        while True:
            if len(self.raw) < len(GZIP_MAGIC) and not self._read_raw() and not self.raw:
                return False
            padding = len(self.raw) - len(self.raw.lstrip(_PADDING))
            if padding:
                self.raw, self.raw_at = self.raw[padding:], self.raw_at + padding
                continue
            if len(self.raw) < len(GZIP_MAGIC) and self._read_raw():
                continue
            if not self.raw.startswith(GZIP_MAGIC):  # junk where a member should start
                self._break(self.raw_at + 1)
                return False
            start = self.buf_at + len(self.buf)
            self.d, self.member_at, self.member_start = zlib.decompressobj(31), self.raw_at, start
            if not self.members or start > self.members[-1][0]:
                self.members.append((start, self.raw_at))
            elif start == self.members[-1][0] and self.raw_at > self.members[-1][1]:
                self.members[-1] = (start, self.raw_at)
            return True

    def _read_raw(self) -> bool:
        data = self.f.read(READ_BLOCK)
        self.raw += data
        return bool(data)

    def _break(self, search_from: int) -> None:
        if self.d is not None:
            self.broken = (self.member_start, self.member_at)
        else:  # junk where a member should start
            self.broken = (self.buf_at + len(self.buf), self.raw_at)
        self.d, self.raw, self.at_break = None, b"", True
        self.next_member = _next_gzip_member(self.f, search_from)


def _next_gzip_member(f, pos: int) -> int | None:
    """The offset of the first gzip member at or after pos whose start decompresses, None if none."""
    while True:
        f.seek(pos)
        window = f.read(READ_BLOCK)
        k = window.find(GZIP_MAGIC)
        if k < 0:
            if len(window) < READ_BLOCK:
                return None
            pos += len(window) - len(GZIP_MAGIC) + 1
            continue
        f.seek(pos + k)
        try:
            zlib.decompressobj(31).decompress(f.read(READ_BLOCK), BLOCK)
            return pos + k
        except zlib.error:
            pos += k + 1


def _status(code: str | None) -> int | None:
    """An HTTP status code, or None where it is none (the record is then skipped as http_status)."""
    try:
        status = int(code) if code else None
    except ValueError:
        return None
    return status if status is not None and 0 <= status <= 999 else None
