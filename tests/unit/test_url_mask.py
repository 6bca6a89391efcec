"""What an error message shows of a URL: where it went, never what it carried."""

from __future__ import annotations

import pytest

from activities.executors.url_mask import mask_urls, masked_url, urls_masked


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://api.test/hook", "https://api.test/hook"),
        ("https://api.test/hook?token=abc&page=2", "https://api.test/hook?token=***&page=***"),
        ("https://api.test/?%74oken=abc&flag", "https://api.test/?%74oken=***&flag"),
        ("https://bot:pw@api.test:8443/x#frag", "https://bot:***@api.test:8443/x"),
        # A user name written alone is the credential (a token, as GitHub's are written).
        ("https://ghp_T0KEN@api.test/x?page=2", "https://***@api.test/x?page=***"),
        ("https://ghp_T0KEN:@api.test/x", "https://***@api.test/x"),
        ("https://api.test/x?to=a@b.test", "https://api.test/x?to=***"),
        ("http://[::1/x?token=abc", "http://[::1/x?token=***"),  # malformed, masked all the same
    ],
)
def test_a_url_keeps_its_host_and_path_and_masks_what_it_carried(url: str, shown: str) -> None:
    assert masked_url(url) == shown


def test_urls_quoted_in_an_error_are_masked() -> None:
    text = "Redirect to https://b.test/cb?code=xyz failed"
    assert mask_urls(text, "https://b.test/cb?code=xyz") == (
        "Redirect to https://b.test/cb?code=*** failed"
    )


def test_every_url_quoted_in_a_message_is_masked_when_which_is_not_known() -> None:
    text = "fetching from http://bob:pw@a.test/?sig=xyz: refused ('https://b.test/x?k=1')."
    assert urls_masked(text) == (
        "fetching from http://bob:***@a.test/?sig=***: refused ('https://b.test/x?k=***')."
    )
    assert urls_masked("no URL, sig=xyz") == "no URL, sig=xyz"
    assert urls_masked("cloning https://ghp_T0KEN@git.test/r.git: 403") == (
        "cloning https://***@git.test/r.git: 403"
    )
