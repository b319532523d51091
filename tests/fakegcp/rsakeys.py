"""RSA for the fake, standard library only.

Key generation (Miller-Rabin over random odd candidates from the secrets module, e = 65537),
PKCS#8 / PKCS#1 DER and PEM encoding written by hand, PEM parsing of the keys we emit, and
RS256 (RSASSA-PKCS1-v1_5 with SHA-256) signing and verification with pow().
"""

import base64
import hashlib
import secrets

E = 65537
_SMALL_PRIMES = []


def _small_primes(limit=2000):
    if _SMALL_PRIMES:
        return _SMALL_PRIMES
    sieve = bytearray([1]) * limit
    sieve[0:2] = b"\x00\x00"
    for i in range(2, int(limit ** 0.5) + 1):
        if sieve[i]:
            sieve[i * i::i] = bytearray(len(sieve[i * i::i]))
    _SMALL_PRIMES.extend(i for i in range(limit) if sieve[i])
    return _SMALL_PRIMES


def is_probable_prime(n, rounds=40):
    if n < 2:
        return False
    for p in _small_primes():
        if n == p:
            return True
        if n % p == 0:
            return False
    d, s = n - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for _ in range(rounds):
        a = secrets.randbelow(n - 3) + 2
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


def _gen_prime(bits):
    while True:
        # top two bits set so that p*q has exactly 2*bits bits; odd
        c = secrets.randbits(bits) | (3 << (bits - 2)) | 1
        if c % E == 1:
            continue
        if is_probable_prime(c, rounds=5) and is_probable_prime(c, rounds=30):
            return c


def generate(bits=2048):
    """Return a dict with n, e, d, p, q, dp, dq, qinv (ints)."""
    half = bits // 2
    while True:
        p = _gen_prime(half)
        q = _gen_prime(half)
        if p == q:
            continue
        n = p * q
        if n.bit_length() != bits:
            continue
        phi = (p - 1) * (q - 1)
        try:
            d = pow(E, -1, phi)
        except ValueError:
            continue
        if p < q:
            p, q = q, p
        return {"n": n, "e": E, "d": d, "p": p, "q": q,
                "dp": d % (p - 1), "dq": d % (q - 1), "qinv": pow(q, -1, p)}


# ---------------------------------------------------------------- DER

def _der_len(n):
    if n < 0x80:
        return bytes([n])
    b = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(b)]) + b


def _tlv(tag, body):
    return bytes([tag]) + _der_len(len(body)) + body


def _der_int(v):
    b = v.to_bytes(max(1, (v.bit_length() + 8) // 8), "big")  # room for a leading 0 sign byte
    # strip redundant leading zeros but keep one when the high bit is set
    while len(b) > 1 and b[0] == 0 and b[1] < 0x80:
        b = b[1:]
    return _tlv(0x02, b)


def _seq(*items):
    return _tlv(0x30, b"".join(items))


RSA_OID = bytes.fromhex("06092a864886f70d010101")  # 1.2.840.113549.1.1.1
NULL = b"\x05\x00"


def pkcs1_private_der(k):
    return _seq(_der_int(0), _der_int(k["n"]), _der_int(k["e"]), _der_int(k["d"]),
                _der_int(k["p"]), _der_int(k["q"]), _der_int(k["dp"]), _der_int(k["dq"]),
                _der_int(k["qinv"]))


def pkcs8_private_der(k):
    return _seq(_der_int(0), _seq(RSA_OID, NULL), _tlv(0x04, pkcs1_private_der(k)))


def spki_public_der(k):
    pub = _seq(_der_int(k["n"]), _der_int(k["e"]))
    return _seq(_seq(RSA_OID, NULL), _tlv(0x03, b"\x00" + pub))


def pem(label, der):
    b = base64.b64encode(der).decode()
    lines = [b[i:i + 64] for i in range(0, len(b), 64)]
    return "-----BEGIN %s-----\n%s\n-----END %s-----\n" % (label, "\n".join(lines), label)


def private_pem(k):
    return pem("PRIVATE KEY", pkcs8_private_der(k))


def public_pem(k):
    return pem("PUBLIC KEY", spki_public_der(k))


def _der_read(buf, pos):
    tag = buf[pos]
    ln = buf[pos + 1]
    pos += 2
    if ln & 0x80:
        nb = ln & 0x7F
        ln = int.from_bytes(buf[pos:pos + nb], "big")
        pos += nb
    return tag, buf[pos:pos + ln], pos + ln


def _der_seq_items(body):
    out, pos = [], 0
    while pos < len(body):
        tag, val, pos = _der_read(body, pos)
        out.append((tag, val))
    return out


def parse_private_pem(text):
    """Parse a PKCS#8 or PKCS#1 RSA private key PEM into the key dict."""
    lines = [l.strip() for l in text.strip().splitlines()]
    label = lines[0]
    der = base64.b64decode("".join(l for l in lines if not l.startswith("-----")))
    _, body, _ = _der_read(der, 0)
    items = _der_seq_items(body)
    if "RSA PRIVATE KEY" not in label:
        inner = items[2][1]
        _, body, _ = _der_read(inner, 0)
        items = _der_seq_items(body)
    ints = [int.from_bytes(v, "big") for _, v in items]
    names = ["ver", "n", "e", "d", "p", "q", "dp", "dq", "qinv"]
    k = dict(zip(names, ints))
    k.pop("ver")
    return k


# ---------------------------------------------------------------- RS256

_SHA256_DIGESTINFO = bytes.fromhex("3031300d060960864801650304020105000420")


def _emsa(msg, klen):
    t = _SHA256_DIGESTINFO + hashlib.sha256(msg).digest()
    if klen < len(t) + 11:
        raise ValueError("key too short")
    return b"\x00\x01" + b"\xff" * (klen - len(t) - 3) + b"\x00" + t


def sign(k, msg):
    klen = (k["n"].bit_length() + 7) // 8
    m = int.from_bytes(_emsa(msg, klen), "big")
    # CRT
    m1 = pow(m, k["dp"], k["p"])
    m2 = pow(m, k["dq"], k["q"])
    h = (k["qinv"] * (m1 - m2)) % k["p"]
    s = m2 + h * k["q"]
    return s.to_bytes(klen, "big")


def verify(n, e, msg, sig):
    klen = (n.bit_length() + 7) // 8
    if len(sig) != klen:
        return False
    s = int.from_bytes(sig, "big")
    if s >= n:
        return False
    em = pow(s, e, n).to_bytes(klen, "big")
    return secrets.compare_digest(em, _emsa(msg, klen))


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def b64url_decode(s):
    if isinstance(s, str):
        s = s.encode()
    return base64.urlsafe_b64decode(s + b"=" * (-len(s) % 4))
