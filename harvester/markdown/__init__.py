"""The Markdown grammar shared by extraction, chunking and rendering."""
