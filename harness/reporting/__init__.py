"""One check run drawn for each reader: the terminal table, the Markdown report and the repro lines
(`report`), the HTML report (`html_report`), JUnit XML (`junit`) and the `--json` verdict
(`verdict_json`). Each draws a `tokconf.checking.run.CheckRun`, or the counts and decision of one; the
CLI and the pytest plugin draw the same table from it (`report.text_table`, `report.summary_rows`)."""
