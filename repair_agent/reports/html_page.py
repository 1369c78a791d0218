"""What every HTML page of the tool renders through: the templates in templates/ (the shared style
included by each page), in one jinja2 environment that autoescapes every printed value after
visible.py has shown it (secrets out, hidden characters named). No page marks run text safe, so a
`<script>` in a diff shows as text and runs nothing; the pages carry no script at all. The run's
page is html_report.py, the sweep's is sweep/html.py."""
from __future__ import annotations

import json

import jinja2

from ..untrusted.visible import html_finalize

_PACKAGE = __name__.rpartition(".")[0]  # templates/ sits beside this module, in its package
# finalize: every printed value is shown through visible.py first (secrets out, hidden characters
# named), then autoescaped: one rule for every field, including ones added later.
ENVIRONMENT = jinja2.Environment(loader=jinja2.PackageLoader(_PACKAGE, "templates"), autoescape=True,
                                 undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                                 finalize=html_finalize)
ENVIRONMENT.filters["pretty"] = lambda value: value if isinstance(value, str) else json.dumps(value, indent=2,
                                                                                           ensure_ascii=False)


def template(name: str) -> jinja2.Template:
    """One page's template (compiled once, then cached by jinja2)."""
    return ENVIRONMENT.get_template(name)
