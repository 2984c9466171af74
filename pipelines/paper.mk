# Generated paper: tables (Markdown, LaTeX), gnuplot figures and RESULTS.md.
.PHONY: paper
paper:
