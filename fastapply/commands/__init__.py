"""The ``fastapply`` commands other than the app itself, one module each; each registers its command on
``fastapply.cli.app`` when imported. They parse options, call the library and render; nothing more."""
