"""Moved: the claims, their rules and the chapter records live in :mod:`sinkpaper.paper` (one registry)."""
raise ImportError("sinkpaper.book.claims moved to sinkpaper.paper: paper.CLAIMS, paper.record(...), paper.listing(), "
                  "paper.rows(...); python -m sinkpaper claims prints the listing")
