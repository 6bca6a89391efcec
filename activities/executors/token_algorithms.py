"""The algorithms a service token may be signed with, apart from the signer (which imports
the JWT library): settings check the choice with no key set, and `trellis` starts fast."""

from __future__ import annotations

from typing import Literal, get_args

HmacAlgorithm = Literal["HS256", "HS384", "HS512"]
KeyAlgorithm = Literal[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"
]
TokenAlgorithm = Literal[HmacAlgorithm, KeyAlgorithm]

HMAC_ALGORITHMS: tuple[str, ...] = get_args(HmacAlgorithm)
KEY_ALGORITHMS: tuple[str, ...] = get_args(KeyAlgorithm)
# What key each asymmetric family signs with, for a key that does not fit.
KEY_TYPES = "RS*/PS*: an RSA key, ES256/384/512: an EC P-256/384/521 key, EdDSA: Ed25519 or Ed448"
