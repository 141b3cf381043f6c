{#- The signatures stage's last step, for both sketches (sql/30_signatures.sql, sql/30_signatures_oph.sql):
    bags_signed.signature, a list of m values, as the columns h0 .. h{m-1}. The modulus (by the signature
    bytes) is taken after the min, since it does not keep the order of the values. #}
final as (
    select
        bags_signed.url_id,
        {%- for i in hashes %}
        cast(bags_signed.signature[{{ i + 1 }}]{{ modulus_op }} as integer) as h{{ i }}{{ "," if not loop.last }}
        {%- endfor %}
    from bags_signed
)
