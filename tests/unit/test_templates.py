"""`{{ … }}` templates in a step's config: which strings keep a value's type, which render as text.

Pure functions, no Temporal: `render` is what a step's config goes through at run time,
`template_expressions` what save-time validation checks.
"""

from __future__ import annotations

from typing import Any

import pytest

from temporal_workflows.expressions import ExpressionError, render, template_expressions

SCOPE: dict[str, Any] = {
    "input": {
        "first": "Ada",
        "last": "Lovelace",
        "count": 3,
        "price": 2.5,
        "vip": True,
        "tags": ["a", "b"],
        "address": {"city": "London", "zip": "N1"},
        "nothing": None,
    },
    "iteration": 2,
}


class TestOneTemplate:
    def test_a_string_that_is_one_template_keeps_the_value_type(self) -> None:
        assert render("{{ input.count }}", SCOPE) == 3
        assert render("{{ input.price }}", SCOPE) == 2.5
        assert render("{{ input.vip }}", SCOPE) is True
        assert render("{{ input.nothing }}", SCOPE) is None

    def test_a_single_template_can_yield_an_object_or_a_list(self) -> None:
        assert render("{{ input.address }}", SCOPE) == {"city": "London", "zip": "N1"}
        assert render("{{ input.tags }}", SCOPE) == ["a", "b"]

    def test_whitespace_around_a_single_template_is_ignored(self) -> None:
        assert render("  {{ input.count }}\n", SCOPE) == 3

    def test_spaces_inside_the_braces_are_optional(self) -> None:
        assert render("{{input.count}}", SCOPE) == 3

    def test_a_bare_name_reads_the_run_input(self) -> None:
        assert render("{{ first }}", SCOPE) == "Ada"

    def test_a_bare_variable_name_reads_the_variable_not_the_input(self) -> None:
        assert render("{{ iteration }}", SCOPE) == 2

    def test_an_expression_is_full_cel(self) -> None:
        assert render("{{ input.count * 2 + 1 }}", SCOPE) == 7
        assert render("{{ input.vip ? 'gold' : 'plain' }}", SCOPE) == "gold"


class TestTemplatesInText:
    def test_text_around_a_template_renders_as_text(self) -> None:
        assert render("Hello {{ input.first }}!", SCOPE) == "Hello Ada!"

    def test_a_number_in_text_renders_as_its_digits(self) -> None:
        assert render("total={{ input.count }}", SCOPE) == "total=3"

    def test_two_templates_separated_by_text_render_as_text(self) -> None:
        assert render("{{ input.first }} {{ input.last }}", SCOPE) == "Ada Lovelace"

    def test_adjacent_templates_render_as_text(self) -> None:
        assert render("{{ input.count }}{{ input.count }}", SCOPE) == "33"
        assert render("{{ input.first }}{{ input.last }}", SCOPE) == "AdaLovelace"

    def test_many_templates_render_in_order(self) -> None:
        text = "{{ input.first }}, {{ input.last }}, {{ input.address.city }} ({{ iteration }})"
        assert render(text, SCOPE) == "Ada, Lovelace, London (2)"

    def test_objects_and_lists_in_text_render_as_compact_json(self) -> None:
        assert render("at {{ input.address }}", SCOPE) == 'at {"city":"London","zip":"N1"}'
        assert render("tags: {{ input.tags }}", SCOPE) == 'tags: ["a","b"]'

    def test_non_ascii_in_an_object_in_text_stays_as_written_in_new_runs(self) -> None:
        # It rendered as "\u00e9\u2713" in a message meant for people; runs started before
        # this render as they did (their replay sees the same text).
        scope = {"input": {"o": {"k": "é✓"}}}
        assert render("v={{ input.o }}", scope, keep_unicode=True) == 'v={"k":"é✓"}'
        assert render("v={{ input.o }}", scope) == 'v={"k":"\\u00e9\\u2713"}'

    def test_booleans_in_text_render_as_cel_writes_them(self) -> None:
        assert render("vip={{ input.vip }}", SCOPE) == "vip=true"

    def test_null_in_text_renders_as_nothing(self) -> None:
        assert render("[{{ input.nothing }}]", SCOPE) == "[]"


class TestBracesInsideExpressions:
    def test_a_closing_pair_inside_a_string_literal_does_not_end_the_template(self) -> None:
        assert render('{{ "}}" }}', SCOPE) == "}}"
        assert (
            render("{{ input.first + '}}' }} and {{ input.last }}", SCOPE) == "Ada}} and Lovelace"
        )

    def test_an_opening_pair_inside_a_string_literal_writes_literal_braces(self) -> None:
        assert render('Use {{ "{{" }} name }} here', SCOPE) == "Use {{ name }} here"

    def test_an_escaped_quote_does_not_end_a_string_literal(self) -> None:
        assert render("{{ 'it\\'s }}' }}", SCOPE) == "it's }}"

    def test_a_backslash_in_a_raw_string_escapes_nothing(self) -> None:
        assert render("{{ r'\\' }}{{ input.first }}", SCOPE) == "\\Ada"

    def test_a_triple_quoted_string_may_hold_quotes_and_braces(self) -> None:
        assert render("{{ '''say \"}}\"''' }}", SCOPE) == 'say "}}"'

    def test_braces_closing_a_map_literal_do_not_end_the_template(self) -> None:
        assert render('{{ {"a": {"b": input.count}} }}', SCOPE) == {"a": {"b": 3}}

    def test_text_braces_outside_templates_are_kept(self) -> None:
        assert render("a } b }} c {{ input.count }}", SCOPE) == "a } b }} c 3"


class TestConfigValues:
    def test_templates_render_through_objects_and_lists(self) -> None:
        config = {"to": [{"name": "{{ input.first }}"}], "n": "{{ input.count }}", "k": 1}
        assert render(config, SCOPE) == {"to": [{"name": "Ada"}], "n": 3, "k": 1}

    def test_a_string_without_templates_is_unchanged(self) -> None:
        assert render("plain } text {", SCOPE) == "plain } text {"

    def test_a_template_that_is_never_closed_stays_text_at_run_time(self) -> None:
        # Refused at save time (below); a definition stored before that still runs.
        assert render("Hello {{ input.first", SCOPE) == "Hello {{ input.first"

    def test_a_template_that_fails_raises_naming_the_expression(self) -> None:
        with pytest.raises(ExpressionError, match=r"CEL evaluation of 'input\.missing' failed"):
            render("Hi {{ input.first }} {{ input.missing }}", SCOPE)


class TestSaveTimeExpressions:
    @pytest.mark.parametrize(
        ("text", "sources"),
        [
            ("{{ input.count }}", ["input.count"]),
            ("Hello {{ first }}!", ["input.first"]),
            ("{{ input.first }} {{ input.last }}", ["input.first", "input.last"]),
            ("{{ a }}{{ b }}", ["input.a", "input.b"]),
            ('{{ "}}" }} x {{ iteration }}', ['"}}"', "iteration"]),
            ('{{ {"a": {"b": 1}} }}', ['{"a": {"b": 1}}']),
            ("no templates }}", []),
        ],
    )
    def test_save_time_sees_each_expression_the_renderer_evaluates(
        self, text: str, sources: list[str]
    ) -> None:
        assert template_expressions(text) == sources

    def test_a_template_that_is_never_closed_is_refused(self) -> None:
        with pytest.raises(ExpressionError, match=r"template at character 6 .* has no closing }}"):
            template_expressions("Hello {{ input.first")

    def test_a_string_literal_that_is_never_closed_leaves_its_template_unclosed(self) -> None:
        with pytest.raises(ExpressionError, match="has no closing }}"):
            template_expressions("{{ 'abc }}")
