"""Analyses over result files: paired comparisons and confidence intervals, published numbers,
plots, seen/unseen splits. Everything here reads result files; nothing re-runs a retriever."""
