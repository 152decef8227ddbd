#!/usr/bin/env python3
"""The description file format's JSON Schema against the docs: every ```json example of
docs/description-files.md and every *.tabq.json under examples/ validates, and documents the
format refuses fail, so the schema says what tabq reads (unit_app_file reads the same examples
with tabq itself)."""
import json
import pathlib
import re
import sys

import jsonschema

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
schema = json.loads((root / "core/share/tabq-description.schema.json").read_text())
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)

good = []
doc = (root / "docs/description-files.md").read_text()
for n, block in enumerate(re.findall(r"```json\n(.*?)```", doc, re.S), 1):
    good.append((f"docs/description-files.md example {n}", block))
for path in sorted(root.glob("examples/**/*.tabq.json")):
    good.append((str(path.relative_to(root)), path.read_text()))

TABLE = '{"name": "jobs", "id": "id"}'
bad = {
    "an unknown role": '{"name": "jobs", "id": "id", "lokced_until": "x"}',
    "an unknown member of an app": '{"name": "a", "tables": [%s], "tabels": []}' % TABLE,
    "a flag of the wrong type": '{"name": "jobs", "id": "id", "fifo": "yes"}',
    "an unknown column type": '{"name": "jobs", "id": {"column": "id", "type": "integer"}}',
    "a table without id": '{"name": "a", "tables": [{"name": "jobs"}]}',
    "a subscription with a table and a route":
        '{"name": "a", "tables": [%s], "subscriptions": [{"table": "jobs", "route": "r"}]}' % TABLE,
    "negative workers":
        '{"name": "a", "tables": [%s], "subscriptions": [{"table": "jobs", "workers": -1}]}' % TABLE,
    "a route with '*' inside":
        '{"name": "a", "tables": [%s], "routes": [{"name": "a*b", "table": "jobs"}]}' % TABLE,
}

failures = 0
for name, text in good:
    errors = list(validator.iter_errors(json.loads(text)))
    for e in errors:
        print(f"{name}: {'/'.join(map(str, e.absolute_path))}: {e.message}")
    failures += bool(errors)
for name, text in bad.items():
    if validator.is_valid(json.loads(text)):
        print(f"the schema takes {name}: {text}")
        failures += 1
print(f"{len(good)} examples valid, {len(bad)} malformed documents refused; {failures} failures")
if len(good) < 3:
    print("too few examples found")
    failures += 1
sys.exit(1 if failures else 0)
