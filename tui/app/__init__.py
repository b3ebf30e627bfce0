"""The Textual app. Widgets render what tui/core computes; nothing here decides a diagnosis.

``app.py`` is the App: it composes the hosts, binds the keys to their components and switches
screens. ``host/`` is each host (state, feed, pane), ``control/`` the keys that change the
world, ``keys/`` the key table, ``screens/`` the screens, ``widgets/`` what widgets share.
``main.py`` starts the app, ``replay.py`` plays a recording in it, ``messages.py`` holds the
messages between the parts, ``ports.py`` what the parts need of the app object, ``scenes.py``
fixed samples for tests and docs; ``driver.py`` and ``heap.py`` tune the terminal driver and
the process's heap.
"""
