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
