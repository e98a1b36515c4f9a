"""`spelled_as_saved`: a draft adds no field at its unset value, and keeps every field it had."""

from __future__ import annotations

from dashboard.tenant_draft import spelled_as_saved

FORM_DEFAULTS = {"query_priority": {"enabled": False, "default_priority": 0, "priorities": []}}


def test_an_empty_block_the_form_adds_is_left_out() -> None:
    assert spelled_as_saved(FORM_DEFAULTS, {}) == {}
    assert spelled_as_saved(FORM_DEFAULTS, None) == {}


def test_a_field_the_saved_block_has_is_kept_even_at_its_unset_value() -> None:
    saved = {"query_priority": {"enabled": True, "priorities": []}}
    assert spelled_as_saved(FORM_DEFAULTS, saved) == {
        "query_priority": {"enabled": False, "priorities": []}
    }
    assert spelled_as_saved({"max_queriers_per_tenant": 0}, {"max_queriers_per_tenant": 3}) == {
        "max_queriers_per_tenant": 0
    }


def test_a_set_value_is_added() -> None:
    draft = {"query_priority": {"enabled": True, "default_priority": 2, "priorities": []}}
    assert spelled_as_saved(draft, {}) == {
        "query_priority": {"enabled": True, "default_priority": 2}
    }


def test_rules_are_kept_whole() -> None:
    rule = {"priority": 1, "reserved_queriers": 0, "query_attributes": [{"regex": ""}]}
    draft = {"query_priority": {"enabled": True, "priorities": [rule]}}
    assert spelled_as_saved(draft, None) == draft


def test_text_the_validator_will_refuse_stays_for_it_to_refuse() -> None:
    assert spelled_as_saved({"max_queriers_per_tenant": "many"}, {}) == {
        "max_queriers_per_tenant": "many"
    }


def test_the_form_puts_back_a_field_saved_at_its_unset_value_inside_a_rule() -> None:
    saved_rule = {"priority": 1, "query_attributes": [{"regex": "", "api_type": "query"}]}
    saved = {"query_priority": {"enabled": True, "priorities": [saved_rule]}}
    posted_rule = {
        "priority": 1,
        "reserved_queriers": 0,
        "query_attributes": [{"api_type": "query"}],
    }
    draft = {"query_priority": {"enabled": True, "priorities": [posted_rule]}}
    assert spelled_as_saved(draft, saved, form=True) == saved


def test_the_yaml_view_may_still_remove_a_field_saved_at_its_unset_value() -> None:
    saved = {"max_queriers_per_tenant": 0, "max_outstanding_requests_per_tenant": 10}
    draft = {"max_outstanding_requests_per_tenant": 10}
    assert spelled_as_saved(draft, saved) == draft


def test_the_form_does_not_put_back_a_cleared_field_that_had_a_value() -> None:
    saved = {
        "query_priority": {"enabled": True, "priorities": [{"query_attributes": [{"regex": "a"}]}]}
    }
    draft = {"query_priority": {"enabled": True, "priorities": [{"query_attributes": [{}]}]}}
    assert spelled_as_saved(draft, saved, form=True) == draft


def test_rules_are_not_paired_by_position_once_one_is_added_or_removed() -> None:
    saved = {"query_priority": {"priorities": [{"priority": 1, "reserved_queriers": 0}]}}
    draft = {"query_priority": {"priorities": [{"priority": 2}, {"priority": 1}]}}
    assert spelled_as_saved(draft, saved, form=True) == draft
