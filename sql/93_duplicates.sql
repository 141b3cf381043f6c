-- stage:  duplicates
-- reads:  documents(url_id, url, row, id, skip_reason, earlier, copy_of), clusters(url, center, is_center), pairs(u, v, similarity)
-- writes: duplicates(row, id, url, reason, kept_row, kept_id, kept_earlier, similarity)
-- order:  row
-- param:  none
--
-- `lshsql dedup`'s decision for every record of this input: 'kept' (the center of its CENTER cluster),
-- 'duplicate' (a member: removed in favour of its center, with the exact Jaccard of their shingle sets,
-- which CENTER guarantees is at least the threshold: a member is paired with its center directly), or the
-- reason it was skipped (no text, malformed JSON, no words ...). kept_earlier marks a document kept by the
-- earlier dedup of `--against`; kept_row and kept_id are then that corpus's. Exact copies have no pairs of their
-- own: their similarity is that of the first document of their set (1 when it is the one kept).

with

assigned as (
    select
        documents.row,
        documents.id,
        documents.url,
        documents.skip_reason,
        clusters.center,
        clusters.is_center,
        coalesce(originals.url, documents.url) as compared
    from documents
    left join clusters on documents.url = clusters.url
    left join documents as originals on documents.copy_of = originals.url_id
    where not documents.earlier
),

final as (
    select
        assigned.row,
        assigned.id,
        assigned.url,
        case
            when assigned.skip_reason is not null then assigned.skip_reason
            when assigned.is_center then 'kept'
            else 'duplicate'
        end as reason,
        centers.row as kept_row,
        centers.id as kept_id,
        centers.earlier as kept_earlier,
        case
            when not assigned.is_center and assigned.compared = assigned.center then cast(1 as double)
            else pairs.similarity
        end as similarity
    from assigned
    left join documents as centers
        on assigned.center = centers.url and not assigned.is_center
    left join pairs
        on assigned.center = pairs.u and assigned.compared = pairs.v and not assigned.is_center
)

select * from final order by row
