"""A traffic simulator for the alert rules (`refcheck alert-rules --simulate`).

It draws a service's claim counts minute by minute from a checker's measured label rates
(`traffic`), evaluates the share alerts on them with numpy (`replay`, the same arithmetic as the
rules) and with the real `promtool test rules` (`promtool`), checks that the two agree, and
reports false pages per 30 days of clean traffic and the time to detect a shift (`report`). The
shipped promtool tests of the share alerts are written by it (`rule_tests`).

Needs numpy (`pip install 'refcheck-callbacks[simulate]'`) and, for the promtool half, promtool
2.x on PATH (Debian's `prometheus` package).
"""
