"""Commands that read a finished run: explore, explain, show, evaluate, report, hierarchy, mirrors."""
