"""Inputs -> work-folder tables: crawl readers, link and anchor-window extraction, ingest of documents."""
