"""The project document: dataclasses, YAML reading/writing with migrations, validation."""
