"""Extra sections of the HTML report (colltune.report.html), one module each.

A module here defines ``SECTIONS: list[colltune.report.html.Section]``; `colltune report` imports every
module of this package and renders their sections in `order` among the built-in ones (multiples
of 10: summary 10, environment 20, method 30, grouped 40, advice 50, slowdown plots 60, heat map
70, calibration 80, quality 90, all verdicts 200). No file outside this package needs editing.
"""
