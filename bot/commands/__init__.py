"""Slash commands: answered directly, never sent to the LLM, never reset a timer.

``menu.py`` names every command (and answers ``/help``); ``runner.py`` checks who may run
one and picks the chat it acts on; each family lives in its own module (``status``,
``summary``, ``recall``, ``people``, ``trace``) and reads or changes things only through
:mod:`bot.ops`. Adding a command touches its module and the menu.
"""
