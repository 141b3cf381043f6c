-- stage:  duplicates
-- reads:  documents(url, row, id, skip_reason, earlier), clusters(url, center, is_center), pairs(u, v, similarity)
-- writes: duplicates(row, id, url, reason, kept_row, kept_id, kept_earlier, similarity)
-- order:  row
-- param:  none
--
-- `lshsql dedup`'s decision for every record of this input: 'kept' (the center of its CENTER cluster),
-- 'duplicate' (a member: removed in favour of its center, with the exact Jaccard of their shingle sets,
-- which CENTER guarantees is at least the threshold: a member is paired with its center directly), or the
-- reason it was skipped (no text, malformed JSON, no words ...). kept_earlier marks a document kept by the
-- earlier dedup of `--against`; kept_row and kept_id are then that corpus's.

with

assigned as (
    select
        documents.row,
        documents.id,
        documents.url,
        documents.skip_reason,
        clusters.center,
        clusters.is_center
    from documents
    left join clusters on documents.url = clusters.url
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
        pairs.similarity
    from assigned
    left join documents as centers
        on assigned.center = centers.url and not assigned.is_center
    left join pairs
        on assigned.center = pairs.u and assigned.url = pairs.v and not assigned.is_center
)

select * from final order by row
