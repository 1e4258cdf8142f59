"""The order in which a pyoxigraph store's indexes hold IRIs, computed without the store.

pyoxigraph keeps every statement in sorted indexes (subject-predicate-object,
predicate-object-subject, ...), each term written as a type byte and, for an IRI, the
128-bit SipHash-2-4 (key 0) of its text, most significant byte first. Scanning an index
therefore yields IRIs in the order of that hash, and so does a SPARQL query answered by
such a scan, without ORDER BY. `iri_key` computes the hash in Python, so that reads from
several index ranges can be merged in exactly the order one scan would give
(`verity.kg.follow`); `store_keeps_this_order` checks the assumption against a store.

    sorted(["http://www.wikidata.org/entity/Q30", "http://www.wikidata.org/entity/Q142"],
           key=iri_key)                     # Q142 first, as the store's indexes hold them
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from verity.kg.templates import DIRECT_CLAIM

if TYPE_CHECKING:
    import pyoxigraph

_MASK = (1 << 64) - 1


def _rotate(x: int, bits: int) -> int:
    return ((x << bits) | (x >> (64 - bits))) & _MASK


def siphash128(data: bytes, key: bytes = bytes(16)) -> int:
    """SipHash-2-4 with a 128-bit output, as an unsigned integer; pyoxigraph's key is zero.

    The reference algorithm (Aumasson and Bernstein, "SipHash: a fast short-input PRF",
    2012, and the 128-bit variant of their reference code), with the two output words
    combined as the Rust ``siphasher`` crate's ``u128::from(Hash128)`` does: the second
    word high, the first low. The reference code writes the same value little-endian.

        siphash128(b"", bytes(range(16))).to_bytes(16, "little").hex()
        # 'a3817f04ba25a8e66df67214c7550293': the reference code's first vector
    """
    k0, k1 = int.from_bytes(key[:8], "little"), int.from_bytes(key[8:16], "little")
    v0, v1 = k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D ^ 0xEE
    v2, v3 = k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573

    def rounds(n: int) -> None:
        nonlocal v0, v1, v2, v3
        for _ in range(n):
            v0 = (v0 + v1) & _MASK
            v1 = _rotate(v1, 13) ^ v0
            v0 = _rotate(v0, 32)
            v2 = (v2 + v3) & _MASK
            v3 = _rotate(v3, 16) ^ v2
            v0 = (v0 + v3) & _MASK
            v3 = _rotate(v3, 21) ^ v0
            v2 = (v2 + v1) & _MASK
            v1 = _rotate(v1, 17) ^ v2
            v2 = _rotate(v2, 32)

    whole = len(data) - len(data) % 8
    for start in range(0, whole, 8):
        word = int.from_bytes(data[start : start + 8], "little")
        v3 ^= word
        rounds(2)
        v0 ^= word
    last = ((len(data) & 0xFF) << 56) | int.from_bytes(data[whole:], "little")
    v3 ^= last
    rounds(2)
    v0 ^= last
    v2 ^= 0xEE
    rounds(4)
    low = v0 ^ v1 ^ v2 ^ v3
    v1 ^= 0xDD
    rounds(4)
    high = v0 ^ v1 ^ v2 ^ v3
    return (high << 64) | low


@lru_cache(maxsize=65_536)
def iri_key(iri: str) -> int:
    """Where an IRI sits among IRIs in a pyoxigraph index: smaller comes first.

    Every IRI comes before every blank node and literal, whose type bytes are higher.
    """
    return siphash128(iri.encode("utf-8"))


def store_keeps_this_order(store: pyoxigraph.Store) -> bool:
    """True when the store's indexes hold IRIs in `iri_key` order.

    Reads the ``wikibase:directClaim`` links (one per property, added by the loader)
    through the predicate-object-subject index, whose objects come in key order; a store
    with fewer than two such links cannot tell, and counts as not keeping it.
    """
    import pyoxigraph

    link = pyoxigraph.NamedNode(DIRECT_CLAIM)
    found = [
        quad.object.value
        for quad in store.quads_for_pattern(None, link, None, pyoxigraph.DefaultGraph())
        if isinstance(quad.object, pyoxigraph.NamedNode)
    ]
    keys = [iri_key(iri) for iri in found]
    return len(keys) >= 2 and keys == sorted(keys)
