"""Engines that run the stage SQL: DuckDB (the default) and Spark, behind one Engine seam."""
