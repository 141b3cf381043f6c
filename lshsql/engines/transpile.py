"""DuckDB stage SQL -> Spark SQL: sqlglot's transpiler, then a small pass of fix-ups, and a lint that
refuses what would not run the same.

The stage files in `sql/` are written for DuckDB. The Spark engine (engines/spark.py) runs the same files:
`to_spark` parses a rendered file with sqlglot (DuckDB dialect), applies the fix-ups below to the syntax
tree and writes it in the Spark dialect. Each fix-up is one small function that makes one construct give
the same values on Spark as on DuckDB (tests/engines/test_transpile.py shows each one's input and output):

    fix_parameters          $name -> :name, Spark's named parameter markers (spark.sql(query, args=...))
    fix_materialized_ctes   `with x as materialized (...)` -> a plain CTE (Spark has no such hint)
    fix_semi_anti_joins     `semi join` / `anti join` -> LEFT SEMI JOIN / LEFT ANTI JOIN
    fix_unnest              `unnest(list)` in a select list -> EXPLODE(list) (no rows for an empty or null
                            list in both); in FROM sqlglot writes LATERAL VIEW EXPLODE
    fix_bitwise_operators   xor(a, b) + c -> (a ^ b) + c, & and | too: Spark binds them looser than +
    fix_list_functions      list_position (1-based, NULL when absent) -> NULLIF(ARRAY_POSITION(...), 0);
                            x[k], k a positive integer -> TRY_ELEMENT_AT(x, k) (1-based, NULL past the end)
    fix_top_n_aggregates    max(x, n) / min(x, n), a list of the n largest (smallest) -> SLICE(SORT_ARRAY(
                            COLLECT_LIST(x)), 1, n), NULL for a group without values as in DuckDB
    fix_window_ranks        row_number() / rank() / dense_rank() / ntile() are BIGINT in DuckDB, INT in Spark
    fix_integer_casts       a cast to an integer type rounds in DuckDB (DOUBLE: half to even, DECIMAL: half
                            away from zero) and truncates in Spark: BROUND / ROUND first
    fix_integer_division    `a // b`: DIV for integers; DuckDB divides as DOUBLE when either side is not one
    fix_division            `/` is DOUBLE division in DuckDB, DECIMAL division in Spark for DECIMAL operands
    fix_libm_functions      ln, exp, pow: Spark uses Java's StrictMath (fdlibm), DuckDB the C library; 1 in 30
                            results differ in the last bit, so Spark calls lsh_ln, lsh_exp, lsh_pow (Arrow
                            UDFs on the C library, lshsql/engines/spark.py)
    fix_decimal_casts       DuckDB casts DOUBLE to DECIMAL(p, s) as round-half-away(x * 10^s), Spark rounds
                            the shortest decimal text of x: the DuckDB arithmetic, spelled out

`count(*) filter (where ...)` needs no fix-up: Spark has the same FILTER clause. Comments are dropped.

`lint` refuses, with a StageError naming the file and the construct, what does not transpile to the same
values and cannot be fixed here: list indices `x[i]` but by a positive integer, `log(x)` (log10
in DuckDB, ln in Spark), trigonometric functions and cbrt (Java's in Spark, not the C library's), ordered
aggregates `list(x order by y)` (Spark's collect_list has no order), unsigned and 128-bit integer types,
`hash()` (engine-specific), random functions, positional parameters, two generators in one select, `//` on
operands of unknown type, DECIMAL scales over 18, and a file that is not one select. A stage either runs
the same on both engines or stops before it runs.

Values assumed: the casts to DECIMAL the fix-up rewrites are casts of DOUBLE values (all the stage files
do), of at most 2^63 / 10^s (9.2 million at scale 12; larger stops Spark with a cast overflow).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from lshsql.errors import ParamError, StageError, one_line

try:
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ErrorLevel, SqlglotError
except ImportError:  # pragma: no cover - the CLI reports it as one line
    raise ParamError("the Spark engine needs sqlglot: pip install 'lshsql[spark]'") from None

READ = "duckdb"
WRITE = "spark"

INTEGER_TYPES = {
    exp.DataType.Type.TINYINT,
    exp.DataType.Type.SMALLINT,
    exp.DataType.Type.INT,
    exp.DataType.Type.BIGINT,
}
FLOAT_TYPES = {exp.DataType.Type.DOUBLE, exp.DataType.Type.FLOAT}
REFUSED_TYPES = {
    exp.DataType.Type.UTINYINT,
    exp.DataType.Type.USMALLINT,
    exp.DataType.Type.UMEDIUMINT,
    exp.DataType.Type.UINT,
    exp.DataType.Type.UBIGINT,
    exp.DataType.Type.UINT128,
    exp.DataType.Type.UINT256,
    exp.DataType.Type.INT128,
    exp.DataType.Type.INT256,
}
RANKS = (exp.RowNumber, exp.Rank, exp.DenseRank, exp.Ntile)
# Spark UDFs on the C library's functions (engines/spark.py registers them), by the node sqlglot parses to.
LIBM_UDFS: dict[type[exp.Expression], str] = {exp.Ln: "lsh_ln", exp.Exp: "lsh_exp", exp.Pow: "lsh_pow"}
FLOAT_FUNCTIONS = (exp.Ln, exp.Exp, exp.Pow, exp.Sqrt, exp.Div)
TRANSCENDENTAL = (
    "sin", "cos", "tan", "cot", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh",
    "atanh", "cbrt",
)  # fmt: skip
BITWISE = (exp.BitwiseAnd, exp.BitwiseOr, exp.BitwiseXor, exp.BitwiseLeftShift, exp.BitwiseRightShift)


# ---------------------------------------------------------------------------------------------- parsing


def parse(duckdb_sql: str, name: str = "query") -> exp.Expression:
    """The one statement of a rendered stage file, parsed as DuckDB SQL; StageError unless it is a select."""
    try:
        statements = [s for s in sqlglot.parse(duckdb_sql, read=READ) if s is not None]
    except SqlglotError as e:
        raise StageError(f"sql/{name}: sqlglot cannot parse it as DuckDB SQL: {one_line(e, 300)}") from None
    if len(statements) != 1 or not isinstance(statements[0], exp.Query):
        raise StageError(f"sql/{name}: the Spark engine runs a stage file of one select, no setup statements")
    return statements[0]


# ---------------------------------------------------------------------------------------------- types


def kind(node: exp.Expression) -> str | None:
    """The numeric kind of an expression read off its syntax: 'int', 'float', 'decimal', or None (a column,
    a parameter, anything whose type only the data knows). DuckDB's typing: a number with a point is DECIMAL,
    with an exponent DOUBLE; `/` is always DOUBLE; round/floor/ceil keep their argument's type."""
    if isinstance(node, exp.Paren | exp.Neg):
        return kind(node.this)
    if isinstance(node, exp.Literal) and not node.is_string:
        text = node.this.lower()
        return "float" if "e" in text else "decimal" if "." in text else "int"
    if isinstance(node, exp.Cast | exp.TryCast):
        to = node.to.this
        if to in INTEGER_TYPES:
            return "int"
        if to in FLOAT_TYPES:
            return "float"
        return "decimal" if to == exp.DataType.Type.DECIMAL else None
    if isinstance(node, FLOAT_FUNCTIONS) or (
        isinstance(node, exp.Anonymous) and node.name.lower() in LIBM_UDFS.values()
    ):
        return "float"
    if isinstance(node, exp.IntDiv):
        return _int_div_kind(node)
    counting = (exp.Count, *RANKS)
    if isinstance(node, counting) or (isinstance(node, exp.Window) and isinstance(node.this, counting)):
        return "int"
    if isinstance(node, BITWISE):
        return "int"
    if isinstance(node, exp.Round | exp.Floor | exp.Ceil | exp.Min | exp.Max | exp.Sum):
        return kind(node.this)
    if isinstance(node, exp.Add | exp.Sub | exp.Mul | exp.Mod):
        return _common_kind([node.this, node.expression])
    if isinstance(node, exp.Greatest | exp.Least | exp.Coalesce):
        return _common_kind([node.this, *node.expressions])
    return None


def _common_kind(nodes: list[exp.Expression]) -> str | None:
    kinds = {kind(n) for n in nodes}
    for k in ("float", None, "decimal"):  # DuckDB: DOUBLE wins; an unknown side leaves it unknown
        if k in kinds:
            return k
    return "int"


def _int_div_kind(node: exp.IntDiv) -> str | None:
    kinds = {kind(node.this), kind(node.expression)}
    return "int" if kinds == {"int"} else "float" if kinds & {"float", "decimal"} else None


def _postorder(tree: exp.Expression, *types: type[exp.Expression]) -> Iterator[exp.Expression]:
    """Nodes of these types, children before their parents, so a node may be replaced after its inside."""
    return reversed(list(tree.find_all(*types)))


def _function(name: str, *args: exp.Expression) -> exp.Anonymous:
    return exp.Anonymous(this=name, expressions=list(args))


def _cast(node: exp.Expression, to: str) -> exp.Cast:
    return exp.Cast(this=node, to=exp.DataType.build(to, dialect=WRITE))


# ---------------------------------------------------------------------------------------------- fix-ups


def fix_parameters(tree: exp.Expression) -> exp.Expression:
    """`$name` -> `:name`: DuckDB's named parameters are placeholders sqlglot writes as Spark's parameter
    markers, bound by spark.sql(query, args={name: value}). Positional ones are refused by lint."""
    for node in _postorder(tree, exp.Parameter):  # `$name` parsed as a session parameter by some versions
        node.replace(exp.Placeholder(this=node.name))
    return tree


def fix_materialized_ctes(tree: exp.Expression) -> exp.Expression:
    """`with x as materialized (...)` -> `with x as (...)`: the hint fixes DuckDB's join order; Spark plans
    the CTE the same either way and has no such syntax."""
    for cte in tree.find_all(exp.CTE):
        cte.set("materialized", None)
    return tree


def fix_semi_anti_joins(tree: exp.Expression) -> exp.Expression:
    """`a semi join b on ...` -> `a LEFT SEMI JOIN b ON ...` (and anti): the rows of a with (without) a
    match in b, once each, in both engines."""
    for join in tree.find_all(exp.Join):
        if join.kind in ("SEMI", "ANTI") and not join.side:
            join.set("side", "LEFT")
    return tree


def fix_bitwise_operators(tree: exp.Expression) -> exp.Expression:
    """`xor(a, b) + c` -> `(a ^ b) + c`: sqlglot writes DuckDB's xor() as Spark's ^ without parentheses, and
    Spark binds ^, & and | looser than + (`a ^ b + c` is `a ^ (b + c)` there): one that is an operand of
    another operator is put in parentheses. (One directly inside another bitwise operator is refused by
    lint: DuckDB and sqlglot read `a | b & c` differently.)"""
    for node in _postorder(tree, exp.BitwiseXor, exp.BitwiseAnd, exp.BitwiseOr):
        if isinstance(node.parent, exp.Binary):
            node.replace(exp.Paren(this=node.copy()))
    return tree


def fix_unnest(tree: exp.Expression) -> exp.Expression:
    """`select unnest(list) as x, ...` -> `SELECT EXPLODE(list) AS x, ...`: one row per element, none for an
    empty or null list, in both. (sqlglot's DuckDB reader already gives EXPLODE for a select list; an
    `unnest` left as a function call is turned into it here. In FROM it becomes LATERAL VIEW EXPLODE.)"""
    for node in _postorder(tree, exp.Unnest):
        if isinstance(node.parent, exp.Select | exp.Alias) and len(node.expressions) == 1:
            node.replace(exp.Explode(this=node.expressions[0]))
    return tree


def fix_window_ranks(tree: exp.Expression) -> exp.Expression:
    """`row_number() over (...)` -> `CAST(ROW_NUMBER() OVER (...) AS BIGINT)`: ids such as url_id are BIGINT
    in DuckDB, and Spark's ranking functions return INT."""
    for window in _postorder(tree, exp.Window):
        if isinstance(window.this, RANKS) and not (
            isinstance(window.parent, exp.Cast) and window.parent.to.this == exp.DataType.Type.BIGINT
        ):
            window.replace(_cast(window.copy(), "BIGINT"))
    return tree


def fix_integer_casts(tree: exp.Expression) -> exp.Expression:
    """`cast(x as integer)`: DuckDB rounds a DOUBLE half to even and a DECIMAL half away from zero, Spark
    truncates. -> `CAST(BROUND(x) AS INT)` (HALF_EVEN; exact for integers, so also right when x's type is
    unknown), or `CAST(ROUND(x) AS INT)` for a DECIMAL x. Integers, strings, booleans and nulls are left."""
    for cast in _postorder(tree, exp.Cast, exp.TryCast):
        inner = cast.this
        if cast.to.this not in INTEGER_TYPES or kind(inner) == "int":
            continue
        if isinstance(inner, exp.Null | exp.Boolean | exp.Predicate | exp.Not) or (
            isinstance(inner, exp.Literal) and inner.is_string
        ):
            continue
        if isinstance(inner, exp.Round | exp.Floor | exp.Ceil) and not inner.args.get("decimals"):
            continue  # already a whole number: truncating it changes nothing
        rounding = "ROUND" if kind(inner) == "decimal" else "BROUND"
        cast.set("this", _function(rounding, inner.copy()))
    return tree


def fix_integer_division(tree: exp.Expression) -> exp.Expression:
    """`a // b`: DuckDB truncates when both sides are integers (Spark's `a DIV b`, sqlglot's default) and
    divides as DOUBLE when either is not -> `CAST(a AS DOUBLE) / b`. Unknown sides are refused by lint."""
    for node in _postorder(tree, exp.IntDiv):
        if _int_div_kind(node) == "float":
            node.replace(exp.Div(this=_cast(node.this.copy(), "DOUBLE"), expression=node.expression.copy()))
    return tree


def fix_division(tree: exp.Expression) -> exp.Expression:
    """`a / b` is DOUBLE division in DuckDB whatever the operands; Spark divides DECIMALs as DECIMAL (1.0/3.0
    is 0.333333). -> `CAST(a AS DOUBLE) / b` unless a side is already DOUBLE (converting an integer first is
    what DuckDB does too)."""
    for node in _postorder(tree, exp.Div):
        if "float" not in (kind(node.this), kind(node.expression)):
            node.set("this", _cast(node.this.copy(), "DOUBLE"))
    return tree


def fix_libm_functions(tree: exp.Expression) -> exp.Expression:
    """`ln(x)`, `exp(x)`, `pow(x, y)` -> `lsh_ln(x)`, `lsh_exp(x)`, `lsh_pow(x, y)`. Spark computes them with
    Java's StrictMath, DuckDB with the C library: ln differs in the last bit for about 1 value in 30, which
    changes TF-IDF weights. The UDFs (spark.py) call the C library through Arrow compute, as DuckDB."""
    for node in _postorder(tree, *LIBM_UDFS):
        args = [node.this] + ([node.expression] if isinstance(node, exp.Pow) else [])
        args = [a.copy() if kind(a) == "float" else _cast(a.copy(), "DOUBLE") for a in args]
        node.replace(_function(LIBM_UDFS[type(node)], *args))
    return tree


def fix_list_functions(tree: exp.Expression) -> exp.Expression:
    """List functions the stage files use that sqlglot leaves as DuckDB spells them. `list_position(l, x)`
    (also list_indexof): the 1-based index of x in l, NULL when absent -> `NULLIF(ARRAY_POSITION(l, x), 0)`
    (Spark's array_position is 1-based too, but gives 0 when absent). list_contains, list_append and [x]
    sqlglot writes as ARRAY_CONTAINS, ARRAY_APPEND (to a null list: the element alone, as DuckDB), ARRAY."""
    for node in _postorder(tree, exp.Anonymous):
        if (
            node.name.lower() in ("list_position", "list_indexof", "array_indexof")
            and len(node.expressions) == 2
        ):
            position = exp.ArrayPosition(
                this=node.expressions[0].copy(), expression=node.expressions[1].copy()
            )
            node.replace(exp.Nullif(this=position, expression=exp.Literal.number(0)))
    for node in _postorder(tree, exp.ArrayPosition):
        if not isinstance(node.parent, exp.Nullif):
            node.replace(exp.Nullif(this=node.copy(), expression=exp.Literal.number(0)))
    for node in _postorder(tree, exp.Bracket):
        if _literal_index(node):  # sqlglot holds the index 0-based
            position = exp.Literal.number(int(node.expressions[0].name) + 1)
            node.replace(_function("TRY_ELEMENT_AT", node.this.copy(), position))
    return tree


def fix_top_n_aggregates(tree: exp.Expression) -> exp.Expression:
    """`max(x, n)` / `min(x, n)`: DuckDB's list of a group's n largest (smallest) values, largest (smallest)
    first, nulls skipped, NULL when there is none -> `CASE WHEN COUNT(x) > 0 THEN SLICE(SORT_ARRAY(
    COLLECT_LIST(x), FALSE), 1, n) END` (TRUE for min): Spark's max and min take one argument."""
    for node in _postorder(tree, exp.Max, exp.Min):
        if node.args.get("count") is None:
            continue
        ascending = exp.Boolean(this=isinstance(node, exp.Min))
        values = _function("SORT_ARRAY", _function("COLLECT_LIST", node.this.copy()), ascending)
        first = _function("SLICE", values, exp.Literal.number(1), node.args["count"].copy())
        some = exp.GT(this=exp.Count(this=node.this.copy()), expression=exp.Literal.number(0))
        node.replace(exp.Case(ifs=[exp.If(this=some, true=first)]))
    return tree


def _literal_index(node: exp.Expression) -> bool:
    """Whether a node is x[k] with k a positive integer literal: the same element in both engines."""
    index = node.expressions[0] if isinstance(node, exp.Bracket) and len(node.expressions) == 1 else None
    return isinstance(index, exp.Literal) and index.is_int and int(index.name) >= 0


def fix_decimal_casts(tree: exp.Expression) -> exp.Expression:
    """`cast(x as decimal(p, s))` of a DOUBLE: DuckDB computes round-half-away-from-zero(x * 10^s) in DOUBLE
    arithmetic; Spark rounds the shortest decimal text of x (half up), which differs for ~1 value in 400 and
    so changes exact DECIMAL sums. -> `CAST(CAST(CAST(ROUND(x * 1e{s}) AS BIGINT) AS DECIMAL(38, s))
    / 10^s AS DECIMAL(p, s))`: the same product and rounding (Spark's ROUND of a DOUBLE is half up, exact),
    then an exact shift of the decimal point. Sums of DECIMAL(38, s) are exact in both, and DECIMAL -> DOUBLE
    is correctly rounded in both."""
    for cast in _postorder(tree, exp.Cast, exp.TryCast):
        if cast.to.this != exp.DataType.Type.DECIMAL or kind(cast.this) in ("int", "decimal"):
            continue
        params = [int(p.name) for p in cast.to.expressions]
        precision, scale = (params + [18, 3])[:2] if params else (18, 3)  # DuckDB's default DECIMAL(18, 3)
        if not 0 <= scale <= 18:
            continue  # lint refuses it
        value = cast.this.copy()
        if scale:
            value = exp.Mul(this=exp.Paren(this=value), expression=exp.Literal.number(f"1e{scale}"))
        whole = _cast(_cast(_function("ROUND", value), "BIGINT"), f"DECIMAL(38, {scale})")
        shifted = exp.Div(this=whole, expression=exp.Literal.number(10**scale)) if scale else whole
        cast.replace(_cast(shifted, f"DECIMAL({precision}, {scale})"))
    return tree


FIXUPS: tuple[Callable[[exp.Expression], exp.Expression], ...] = (
    fix_parameters,
    fix_materialized_ctes,
    fix_semi_anti_joins,
    fix_unnest,
    fix_bitwise_operators,
    fix_list_functions,
    fix_top_n_aggregates,
    fix_window_ranks,
    fix_integer_casts,
    fix_integer_division,
    fix_division,
    fix_libm_functions,
    fix_decimal_casts,  # last: it writes Spark arithmetic the passes above must not touch
)


# ---------------------------------------------------------------------------------------------- lint


@dataclass(frozen=True)
class Refusal:
    """A construct that does not transpile to the same values, and how to find it in DuckDB's syntax tree."""

    construct: str
    why: str
    found: Callable[[exp.Expression], bool]


def _is_call(*names: str) -> Callable[[exp.Expression], bool]:
    return lambda node: isinstance(node, exp.Anonymous) and node.name.lower() in names


def _is_function(*names: str) -> Callable[[exp.Expression], bool]:
    """A call of one of these functions, whether sqlglot knows it (exp.Sin) or not (exp.Anonymous)."""

    def found(node: exp.Expression) -> bool:
        if isinstance(node, exp.Anonymous):
            return node.name.lower() in names
        return isinstance(node, exp.Func) and node.sql_name().lower() in names

    return found


def _ordered_aggregate(node: exp.Expression) -> bool:
    return isinstance(node, exp.AggFunc) and isinstance(node.this, exp.Order)


def _positional_parameter(node: exp.Expression) -> bool:
    return isinstance(node, exp.Placeholder) and (node.name in ("", "?") or node.name.isdigit())


def _two_generators(node: exp.Expression) -> bool:
    return (
        isinstance(node, exp.Select)
        and sum(1 for e in node.expressions for _ in e.find_all(exp.Explode, exp.Unnest)) > 1
    )


def _unknown_int_div(node: exp.Expression) -> bool:
    return isinstance(node, exp.IntDiv) and _int_div_kind(node) is None


BITWISE = (exp.BitwiseAnd, exp.BitwiseOr, exp.BitwiseXor, exp.BitwiseLeftShift, exp.BitwiseRightShift)


def _bitwise_unbracketed(node: exp.Expression) -> bool:
    """A bitwise operator directly inside another of a different kind (a chain of one kind reads the same)."""
    return (
        isinstance(node, BITWISE) and isinstance(node.parent, BITWISE) and type(node) is not type(node.parent)
    )


def _decimal_scale(node: exp.Expression) -> bool:
    if not (isinstance(node, exp.DataType) and node.this == exp.DataType.Type.DECIMAL):
        return False
    params = [p.name for p in node.expressions]
    return len(params) == 2 and params[1].isdigit() and int(params[1]) > 18


REFUSALS: tuple[Refusal, ...] = (
    Refusal(
        "a bitwise operator directly inside another (a | b & c)",
        "DuckDB gives &, | and << one precedence, left to right ((a | b) & c), sqlglot and Spark bind & "
        "tighter (a | (b & c)): put the inner one in parentheses",
        _bitwise_unbracketed,
    ),
    Refusal(
        "a list index x[i]",
        "DuckDB lists are 1-based and give NULL past the end, Spark arrays are 0-based and fail (a positive "
        "integer literal index is rewritten)",
        lambda node: isinstance(node, exp.Bracket) and not _literal_index(node),
    ),
    Refusal(
        "log()",
        "log(x) is log10 in DuckDB and ln in Spark (and log10, log2 are Java's there, not the C library's); "
        "write ln(x), which runs the same",
        lambda node: isinstance(node, exp.Log),
    ),
    Refusal(
        "a trigonometric or cube-root function",
        "Spark computes it with Java's StrictMath, DuckDB with the C library: the last bit may differ",
        _is_function(*TRANSCENDENTAL),
    ),
    Refusal(
        "an ordered aggregate (list/string_agg/first ... order by)",
        "Spark aggregates have no order by (sqlglot drops it from collect_list silently)",
        _ordered_aggregate,
    ),
    Refusal(
        "an unsigned or 128-bit integer type",
        "Spark has signed integers of at most 64 bits",
        lambda node: isinstance(node, exp.DataType) and node.this in REFUSED_TYPES,
    ),
    Refusal(
        "a DECIMAL scale over 18",
        "the Spark engine rewrites DECIMAL casts through BIGINT, which holds 18 decimal places at most",
        _decimal_scale,
    ),
    Refusal(
        "hash()",
        "DuckDB's hash() changes between releases and Spark's is another function; use lsh_term_hash",
        _is_call("hash"),
    ),
    Refusal(
        "a random function",
        "random values differ between runs and engines",
        lambda node: (
            isinstance(node, exp.Rand | exp.Uuid) or _is_call("random", "uuid", "gen_random_uuid")(node)
        ),
    ),
    Refusal(
        "a positional parameter ($1 or ?)",
        "parameters are bound by name on both engines",
        _positional_parameter,
    ),
    Refusal(
        "two unnest() in one select",
        "Spark allows one generator per select list",
        _two_generators,
    ),
    Refusal(
        "a // b on operands of unknown type",
        "DuckDB truncates integers and divides anything else as DOUBLE; cast an operand to say which",
        _unknown_int_div,
    ),
)


def lint(duckdb_sql: str, name: str) -> None:
    """Refuse a rendered stage file the Spark engine would not run the same: raise StageError("sql/<name>:
    <construct> does not transpile to Spark: <why>"). Also parses the file as DuckDB SQL and its
    transpilation as Spark SQL, so a file that does not parse in either dialect stops here too."""
    tree = parse(duckdb_sql, name)
    for node in tree.walk():
        for refusal in REFUSALS:
            if refusal.found(node):
                raise StageError(
                    f"sql/{name}: {refusal.construct} does not transpile to Spark: {refusal.why} "
                    f"(at: {_snippet(node)})"
                )
    spark_sql = _generate(_fixed(tree), name)
    try:
        sqlglot.parse_one(spark_sql, read=WRITE)
    except SqlglotError as e:
        raise StageError(f"sql/{name}: its Spark transpilation does not parse: {one_line(e, 300)}") from None


def _snippet(node: exp.Expression) -> str:
    text = node.sql(dialect=READ)
    return text if len(text) <= 80 else text[:77] + "..."


# ---------------------------------------------------------------------------------------------- transpile


def to_spark(duckdb_sql: str, name: str = "query", lint_first: bool = True) -> str:
    """The Spark SQL of a rendered DuckDB stage file (one select; `$name` parameters become `:name`).

    Lints first (StageError for a refused construct), then transpiles with sqlglot and applies FIXUPS.

    Example:
        >>> to_spark("select count(*) as n from urls where url_id >= $first")
        'SELECT COUNT(*) AS n FROM urls WHERE url_id >= :first'
    """
    if lint_first:
        lint(duckdb_sql, name)
    return _generate(_fixed(parse(duckdb_sql, name)), name)


def to_spark_tree(duckdb_sql: str, name: str = "query") -> exp.Expression:
    """The linted, fixed-up syntax tree (Spark semantics), for callers that take the final ORDER BY off."""
    lint(duckdb_sql, name)
    return _fixed(parse(duckdb_sql, name))


def generate(tree: exp.Expression, name: str = "query") -> str:
    """Spark SQL text of a tree from to_spark_tree."""
    return _generate(tree, name)


def _fixed(tree: exp.Expression) -> exp.Expression:
    tree = tree.copy()
    for fixup in FIXUPS:
        tree = fixup(tree)
    return tree


def _generate(tree: exp.Expression, name: str) -> str:
    try:
        return tree.sql(dialect=WRITE, unsupported_level=ErrorLevel.RAISE, comments=False)
    except SqlglotError as e:
        raise StageError(f"sql/{name}: sqlglot cannot write it as Spark SQL: {one_line(e, 300)}") from None
