"""`lshsql serve`: a local, read-only web application over a finished work folder.

server.py   the HTTP server (standard library), its routes and the errors that become pages
site.py     the work folder, checked at start and opened per request (DuckDB over its Parquet files)
layout.py   the page shell, inline CSS, escaping, links, the pager, query-string parameters
front.py    /: the clusters, largest first, with search and filters
cluster.py  /cluster/<cluster_id>: the members with titles, in-degrees, snippets, chaining
url.py      /url?u=: What's Related with its evidence; /capture?u=: the stored page as text
pair.py     /pair?u=&v=: why two URLs were paired, and their texts side by side, differences marked
text.py     the text of a stored page or document, read again from the input at its offset
"""

from lshsql.web.server import address, make_server

__all__ = ["address", "make_server"]
