-- stage:  mirrors
-- reads:  clusters(url, center_id, size)
-- writes: mirrors(host_a, host_b, shared_clusters, clusters_a, clusters_b, jaccard)
-- order:  jaccard desc, shared_clusters desc, host_a, host_b
-- param:  min_shared BIGINT  pairs of hosts sharing fewer clusters than this are dropped
--
-- Host mirrors: page clusters aggregated to pairs of hosts. A host's clusters are the clusters of size >= 2
-- holding at least one of its URLs (a singleton says nothing about another host). Two hosts sharing
-- clusters are compared by the Jaccard of their cluster sets, |A and B| / |A or B|: a site and its mirror
-- have the same pages, described by the same anchor texts, so each page clusters with its twin and their
-- cluster sets are (nearly) equal. clusters may be the clusters table or a cut of the cluster tree.
--
-- The host is read off the canonical URL with a regexp: scheme://[userinfo@]host[:port]/... . Canonical
-- URLs already have a lowercase host and no default port; the regexp drops userinfo and any other port
-- (so a.example:8080 and a.example are one host), keeps an IPv6 literal with its brackets, and lowercases
-- once more for URLs kept raw because they could not be canonicalized. A url that is not
-- scheme://host/... (a document id from `lshsql ingest`) has no host and is left out.
-- Pairs come from a self-join per cluster: a cluster spanning h hosts makes h(h-1)/2 rows.

with

url_hosts as (
    select
        lower(
            regexp_extract(
                clusters.url, '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^/?#]*@)?(\[[^\]/?#]*\]|[^:/?#]*)', 1
            )
        ) as host,
        clusters.center_id
    from clusters
    where clusters.size >= 2
),

host_clusters as (
    select distinct
        url_hosts.host,
        url_hosts.center_id
    from url_hosts
    where url_hosts.host <> ''
),

host_sizes as (
    select
        host_clusters.host,
        count(*) as n_clusters
    from host_clusters
    group by host_clusters.host
),

shared as (
    select
        cluster_a.host as host_a,
        cluster_b.host as host_b,
        count(*) as shared_clusters
    from host_clusters as cluster_a
    inner join host_clusters as cluster_b
        on cluster_a.center_id = cluster_b.center_id and cluster_a.host < cluster_b.host
    group by cluster_a.host, cluster_b.host
    having count(*) >= $min_shared
),

final as (
    select
        shared.host_a,
        shared.host_b,
        shared.shared_clusters,
        sizes_a.n_clusters as clusters_a,
        sizes_b.n_clusters as clusters_b,
        cast(shared.shared_clusters as double)
        / (sizes_a.n_clusters + sizes_b.n_clusters - shared.shared_clusters) as jaccard
    from shared
    inner join host_sizes as sizes_a on shared.host_a = sizes_a.host
    inner join host_sizes as sizes_b on shared.host_b = sizes_b.host
)

select * from final order by jaccard desc, shared_clusters desc, host_a, host_b
