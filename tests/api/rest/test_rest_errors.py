"""The shape of validation errors: validator paths → DRF's nested error dict."""

from __future__ import annotations

from api.rest.errors import nested_errors, split_path
from api.rest.views.runtime_config import tenant_aware_splitter
from scheduler_core.errors import FieldError


def test_paths_split_on_dots_and_indexes():
    assert split_path("query_priority.priorities[1].query_attributes[0].regex") == [
        "query_priority",
        "priorities",
        "1",
        "query_attributes",
        "0",
        "regex",
    ]
    assert split_path("(root)") == []
    assert split_path("a[2][3]") == ["a", "2", "3"]


def test_list_items_are_keyed_by_index_and_root_errors_are_non_field_errors():
    errors = nested_errors(
        [
            FieldError("query_priority.priorities[1].priority", "required"),
            FieldError("(root)", "a tenant config must be a mapping"),
        ]
    )
    assert errors == {
        "query_priority": {"priorities": {"1": {"priority": ["required"]}}},
        "non_field_errors": ["a tenant config must be a mapping"],
    }


def test_a_message_on_an_object_with_failing_children_goes_under_non_field_errors():
    both_orders = [
        [FieldError("p", "too many"), FieldError("p[0].x", "bad")],
        [FieldError("p[0].x", "bad"), FieldError("p", "too many")],
    ]
    for errors in both_orders:
        assert nested_errors(errors) == {
            "p": {"non_field_errors": ["too many"], "0": {"x": ["bad"]}}
        }


def test_dotted_tenant_ids_stay_whole_in_import_errors():
    split = tenant_aware_splitter(["team", "team.payments"])
    assert split("overrides.team.payments.query_priority.enabled") == [
        "overrides",
        "team.payments",
        "query_priority",
        "enabled",
    ]
    assert split("overrides.team") == ["overrides", "team"]
    assert split("overrides.team.max_queriers_per_tenant") == [
        "overrides",
        "team",
        "max_queriers_per_tenant",
    ]


def test_the_tenant_aware_splitter_keeps_the_longest_id_and_splits_indexes_after_it():
    split = tenant_aware_splitter(["a", "a.b", "a.b.c"])
    assert split("overrides.a.b.c[2].x") == ["overrides", "a.b.c", "2", "x"]
    assert split("overrides.a.b.d") == ["overrides", "a.b", "d"]
    assert split("overrides.a[0]") == ["overrides", "a", "0"]
    # Not a tenant of the file: split on every dot, as any other path.
    assert split("overrides.z.y") == ["overrides", "z", "y"]
    assert split("settings.x") == ["settings", "x"]


class _CountingId(str):
    """A tenant ID that counts how often it is compared with a path's text."""

    comparisons = 0

    def __eq__(self, other: object) -> bool:
        type(self).comparisons += 1
        return str.__eq__(self, other)

    def __hash__(self) -> int:
        return str.__hash__(self)

    def startswith(self, *args: object) -> bool:  # type: ignore[override]
        type(self).comparisons += 1
        return str.startswith(self, *args)  # type: ignore[arg-type]


def test_the_tenant_aware_splitter_compares_each_error_with_one_id_not_with_every_id():
    # A file of 16,000 bad tenants took 54 s to answer when every error's
    # path was compared with every tenant ID; a path's own prefixes are
    # looked up instead, so the comparisons grow with the errors only.
    _CountingId.comparisons = 0
    ids = [_CountingId(f"team.{i}") for i in range(300)]
    split = tenant_aware_splitter(ids)
    paths = [f"overrides.team.{i}.max_queriers_per_tenant" for i in range(300)]
    assert [split(path)[1] for path in paths] == [f"team.{i}" for i in range(300)]
    assert _CountingId.comparisons <= 2 * len(paths)


def test_an_answer_lists_at_most_a_thousand_errors_and_says_how_many_more_there_were():
    errors = [FieldError(f"overrides.t{i}.x", "bad") for i in range(1003)]
    tree = nested_errors(errors, tenant_aware_splitter([f"t{i}" for i in range(1003)]))
    assert len(tree["overrides"]) == 1000
    assert "t999" in tree["overrides"] and "t1000" not in tree["overrides"]
    assert tree["non_field_errors"] == [
        "3 more errors were not listed (an answer lists the first 1000); "
        "fix these and send it again to see the rest"
    ]


def test_an_answer_of_a_thousand_errors_or_fewer_lists_them_all_without_a_note():
    errors = [FieldError(f"p[{i}]", "bad") for i in range(1000)]
    tree = nested_errors(errors)
    assert len(tree["p"]) == 1000 and "non_field_errors" not in tree
