"""The configuration: ``config.toml`` read and checked, and the settings the bot runs with.

``model.py`` holds the model of the file and reads it (its tables: ``values.py`` for the
forms a value may take, ``groups.py`` for ``[groups]`` and ``[budget]``, ``profiles.py``
for ``[[profiles]]`` and ``[access]``; ``errors.py`` words what is wrong in TOML's words;
``keys.py`` lists every key). ``settings.py`` holds what the running bot reads, swapped
whole by a reload; ``personas.py`` reads the persona files.
"""
