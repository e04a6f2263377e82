"""Look at finished runs: `compare` (paired differences between two runs), `report`
(a cross-run table, plots and a static per-sample viewer). Entry points:
skyeval.report.compare:main and skyeval.report.build:main."""
