-- stage:  documents
-- reads:  records(source, source_path, ord, id, n_bytes, n_shingles, seq, keep, skip_reason, digest_a, digest_b)
-- reads:  earlier_kept(url_id, row, id, source_path)
-- writes: documents(url_id, url, stream_id, row, source, ord, id, n_bytes, n_shingles, skip_reason, earlier, copy_of)
-- order:  url_id nulls last, row
-- param:  policy VARCHAR   which document of a group stays: 'first' (input order), 'longest' (most bytes
--                          of text) or 'column' (the largest keep value: numbers as numbers, else as text)
-- param:  base BIGINT      the earlier corpus's kept documents (`--against`) hold url_ids 1 .. base
-- param:  digits BIGINT    a url is its url_id written with this many digits, a space and the document's
--                          id (or # and its row): byte order is url_id order, and results read well
--
-- `lshsql dedup`'s documents: every record read, with its row (0-based, in input order: file by file,
-- record by record) and, when it has shingles, its url_id: base + its rank under the keep policy. CENTER
-- keeps nodes in url_id order, so the rank decides which document of a group is kept. stream_id (records'
-- seq) is the url_id the sets were written under, in reading order: the same for the policy 'first'. The
-- earlier corpus's kept documents come first, with their earlier row and id: a new document can only be
-- removed in their favour, never the reverse. copy_of marks the exact copies (documents with the same
-- shingle set as one before them in keep order) with the url_id of the first document of their set.

with

records_numbered as (
    select
        records.*,
        row_number() over (order by records.source, records.ord) - 1 as row
    from records
),

ranks as (
    select
        records_numbered.row,
        records_numbered.id,
        $base + row_number() over (
            order by
                case when $policy = 'longest' then records_numbered.n_bytes end desc nulls last,
                case
                    when $policy = 'column' then try_cast(records_numbered.keep as double)
                end desc nulls last,
                case when $policy = 'column' then records_numbered.keep end desc nulls last,
                records_numbered.row
        ) as url_id,
        records_numbered.n_shingles,
        records_numbered.digest_a,
        records_numbered.digest_b
    from records_numbered
    where records_numbered.seq is not null
),

-- A shingle set is known by its size and its two 64-bit digests: the first of its documents in keep order
-- is compared in the place of the others, its exact copies, and decides for them (see lshsql/tools/dedup.py)
ranked as (
    select
        ranks.row,
        ranks.url_id,
        lpad(cast(ranks.url_id as varchar), $digits, '0')
        || ' '
        || coalesce(ranks.id, '#' || ranks.row) as url,
        nullif(
            min(ranks.url_id) over (partition by ranks.n_shingles, ranks.digest_a, ranks.digest_b),
            ranks.url_id
        ) as copy_of
    from ranks
),

final as (
    select
        ranked.url_id,
        ranked.url,
        records_numbered.seq as stream_id,
        records_numbered.row,
        records_numbered.source_path as source,
        records_numbered.ord,
        records_numbered.id,
        records_numbered.n_bytes,
        records_numbered.n_shingles,
        records_numbered.skip_reason,
        false as earlier,
        ranked.copy_of
    from records_numbered
    left join ranked on records_numbered.row = ranked.row
    union all
    select
        earlier_kept.url_id,
        lpad(cast(earlier_kept.url_id as varchar), $digits, '0')
        || ' '
        || coalesce(earlier_kept.id, '#' || earlier_kept.row) as url,
        earlier_kept.url_id as stream_id,
        earlier_kept.row,
        earlier_kept.source_path as source,
        null as ord,
        earlier_kept.id,
        null as n_bytes,
        null as n_shingles,
        null as skip_reason,
        true as earlier,
        null as copy_of
    from earlier_kept
)

select * from final order by url_id nulls last, row
