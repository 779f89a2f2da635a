"""``bgtrain analyse``: the analysis of played games from match files.

Modules: ``games`` (reading ``.mat`` files and walking each game on the board: the turns and cube
decisions), ``sgf`` (GNU Backgammon's ``.sgf`` files, read into the same games), ``evaluate`` (all checker plays, cube decisions and luck of many files in shared batches),
``summary`` (the report as plain data: per decision, per player, error rates, PR, marks, cube errors,
luck), ``marks`` (GNU Backgammon's thresholds), ``report`` (text) and ``html`` (a page with boards and
equity graphs). Imports the core, ``cube``, ``arena.matfile`` and ``engine``.
"""
