"""Independent oracle for the discount_shop percentage-discount bug.

Usage: python3 -I -S oracle.py <repository-root>

Imports discount_shop from <root>/src (stdlib only, never pytest), checks
that apply_discount treats its argument as a percentage, prints one line of
JSON {"ok": bool, "checks": [...]} and exits 0 if every check passed, else 1.
"""

import json
import os
import sys

# (name, price, discount, expected)
CASES = [
    ("ten_percent_of_100", 100, 10, 90),
    ("quarter_off_80", 80, 25, 60),
    ("zero_discount_keeps_59_99", 59.99, 0, 59.99),
    ("full_discount_is_free", 100, 100, 0),
    ("fifteen_percent_of_200", 200, 15, 170),
    ("half_off_19_98", 19.98, 50, 9.99),
    ("twenty_percent_of_49_99", 49.99, 20, 39.99),
    ("one_percent_of_250", 250, 1, 247.5),
]


def _jsonable(value):
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return repr(value)


def main(argv):
    if len(argv) < 2:
        print(json.dumps({"ok": False, "checks": [
            {"name": "usage", "ok": False, "got": "missing repository root", "expected": "argv[1]"}]}))
        return 1
    root = os.path.abspath(argv[1])
    sys.dont_write_bytecode = True  # leave the checked-out repository untouched
    sys.path.insert(0, os.path.join(root, "src"))

    checks = []
    try:
        from discount_shop.pricing import apply_discount
    except BaseException as exc:  # noqa: BLE001 - any import failure is a failed check
        checks.append({"name": "import_discount_shop.pricing", "ok": False,
                       "got": repr(exc), "expected": "importable"})
        print(json.dumps({"ok": False, "checks": checks}))
        return 1

    for name, price, discount, expected in CASES:
        try:
            got = apply_discount(price, discount)
            ok = (isinstance(got, (int, float)) and not isinstance(got, bool)
                  and abs(got - expected) < 1e-9)
            got_out = _jsonable(got)
        except Exception as exc:  # noqa: BLE001 - package exceptions are failures
            ok, got_out = False, repr(exc)
        checks.append({"name": name, "ok": ok, "got": got_out, "expected": expected})

    all_ok = all(check["ok"] for check in checks)
    print(json.dumps({"ok": all_ok, "checks": checks}))
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
