"""Loopback fakes of the outside world, shared by the tests and the benchmarks.

``bot_api`` plays the Telegram Bot API over HTTP, ``onebot`` plays a OneBot v11
implementation over the reverse WebSocket, ``qq_open_platform`` plays the official QQ bot
API (token, REST and gateway), ``openai_api`` plays an OpenAI-compatible server, and
``harness`` runs the real core against a recording platform. None of them is
part of the installed bot.
"""
