"""Cloud Storage JSON API: objects get (metadata / alt=media), multipart and media upload, delete,
list (prefix, pageToken, maxResults), with generation preconditions. Every bucket exists (no bucket
API). A test may ask for an object to be deleted right after the Nth answered call of an RPC
(delete_after), to lose the state in the middle of an apply without a sleep."""

import base64
import hashlib
import json
import secrets

import common
from common import ApiError


def _crc32c_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


_T = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _T[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def storage_err(http, msg, reason):
    return ApiError(http, msg, reason=reason)


class Storage:
    NAME = "storage"
    HOST = "storage.googleapis.com"

    def __init__(self, world):
        self.world = world
        self.reset()

    def reset(self):
        self.objects = {}   # "bucket/name" -> {"meta": {...}, "data": base64}
        self.gen = 1700000000000000
        self.delete_after = []  # [{"rpc", "count", "bucket", "name", "seen"}], see after_call

    def arm_delete_after(self, b):
        """POST /_fake/objects/delete-after {"rpc": R, "count": N, "bucket": B, "name": O}: once the
        Nth call of R has been answered with a 2xx, O is deleted (if it exists). Each arming fires once."""
        if not isinstance(b.get("rpc"), str) or not isinstance(b.get("bucket"), str) or \
                not isinstance(b.get("name"), str):
            raise ValueError("rpc, bucket and name (strings) are required")
        n = b.get("count", 1)
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError("count must be an integer >= 1")
        self.delete_after.append({"rpc": b["rpc"], "count": n, "bucket": b["bucket"], "name": b["name"],
                                  "seen": 0, "deleted": None})
        return {"armed": self.delete_after}

    def after_call(self, rpc, status):
        """Called by the server (world lock held) after each routed call was answered."""
        if not isinstance(status, int) or not 200 <= status < 300:
            return
        for t in self.delete_after:
            if t["rpc"] != rpc or t["seen"] >= t["count"]:
                continue
            t["seen"] += 1
            if t["seen"] == t["count"]:
                gone = self.objects.pop(t["bucket"] + "/" + t["name"], None)
                t["deleted"] = gone["meta"]["generation"] if gone else None

    def dump(self):
        return {"objects": self.objects, "gen": self.gen}

    def load(self, d):
        self.objects.update(d.get("objects", {}))
        self.gen = d.get("gen", self.gen)

    def route(self, req):
        from fakegcp import Route
        s = req.segments
        m = req.method
        rpc = fn = None
        if len(s) == 5 and s[:2] == ["storage", "v1"] and s[2] == "b" and s[4] == "o" and m == "GET":
            rpc, fn = "storage.objects.list", self.list
        elif len(s) == 6 and s[:3] == ["upload", "storage", "v1"] and s[3] == "b" and s[5] == "o" and m == "POST":
            rpc, fn = "storage.objects.insert", self.insert
        elif len(s) == 7 and s[:2] == ["storage", "v1"] and s[2] == "b" and s[4] == "o" and s[6] == "compose" \
                and m == "POST":
            rpc, fn = "storage.objects.compose", self.compose
        elif len(s) == 6 and s[:2] == ["storage", "v1"] and s[2] == "b" and s[4] == "o":
            rpc, fn = {"GET": ("storage.objects.get", self.get),
                       "DELETE": ("storage.objects.delete", self.delete)}.get(m, (None, None))
        if fn is None:
            return None
        return Route(rpc, "storage", fn, service=self)

    def _check(self, req, cur):
        """Generation/metageneration preconditions. cur: stored object or None."""
        gm = req.q("ifGenerationMatch")
        if gm is not None:
            if not gm.lstrip("-").isdigit():
                raise storage_err(400, "Invalid argument for ifGenerationMatch.", "invalid")
            want = int(gm)
            have = int(cur["meta"]["generation"]) if cur else 0
            if want != have:
                raise ApiError(412, "At least one of the pre-conditions you specified did not hold.", errors=[{
                    "domain": "global", "reason": "conditionNotMet",
                    "message": "At least one of the pre-conditions you specified did not hold.",
                    "locationType": "header", "location": "If-Match"}])
        gnm = req.q("ifGenerationNotMatch")
        if gnm is not None and cur and int(gnm) == int(cur["meta"]["generation"]):
            raise ApiError(304, "Not Modified")
        mm = req.q("ifMetagenerationMatch")
        if mm is not None and (not cur or int(mm) != int(cur["meta"]["metageneration"])):
            raise ApiError(412, "At least one of the pre-conditions you specified did not hold.", errors=[{
                "domain": "global", "reason": "conditionNotMet",
                "message": "At least one of the pre-conditions you specified did not hold.",
                "locationType": "header", "location": "If-Metageneration-Match"}])
        mnm = req.q("ifMetagenerationNotMatch")
        if mnm is not None and cur and int(mnm) == int(cur["meta"]["metageneration"]):
            raise ApiError(304, "Not Modified")

    def _lookup(self, req):
        bucket, name = req.segments[3], req.segments[5]
        cur = self.objects.get(bucket + "/" + name)
        g = req.q("generation")
        if cur is not None and g is not None and g != cur["meta"]["generation"]:
            cur = None
        return bucket, name, cur

    def get(self, req):
        bucket, name, cur = self._lookup(req)
        if cur is None:
            raise storage_err(404, "No such object: %s/%s" % (bucket, name), "notFound")
        self._check(req, cur)
        meta = cur["meta"]
        if req.q("alt") == "media":
            data = base64.b64decode(cur["data"])
            return 200, data, {
                "Content-Type": meta.get("contentType", "application/octet-stream"),
                "X-Goog-Generation": meta["generation"], "X-Goog-Metageneration": meta["metageneration"],
                "X-Goog-Hash": "crc32c=%s" % meta["crc32c"] + (",md5=%s" % meta["md5Hash"] if "md5Hash" in meta else ""),
                "X-Goog-Stored-Content-Length": str(len(data)), "ETag": meta["etag"]}
        return 200, meta, {}

    def list(self, req):
        """objects.list: names in lexicographic order, from the one after pageToken, at most
        maxResults (default and ceiling 1000, or the world's max_page_size)."""
        bucket = req.segments[3]
        prefix = req.q("prefix") or ""
        size = 1000
        mr = req.q("maxResults")
        if mr is not None:
            if not mr.isdigit() or int(mr) < 1:
                raise storage_err(400, "Invalid value for maxResults: %s" % mr, "invalid")
            size = min(size, int(mr))
        if self.world.max_page_size:
            size = min(size, self.world.max_page_size)
        after = ""
        tok = req.q("pageToken")
        if tok:
            try:
                after = base64.urlsafe_b64decode(tok.encode()).decode()
            except ValueError:
                raise storage_err(400, "Invalid page token.", "invalid")
        names = sorted(k.split("/", 1)[1] for k in self.objects
                       if k.startswith(bucket + "/") and k.split("/", 1)[1].startswith(prefix))
        names = [n for n in names if n > after]
        page = names[:size]
        out = {"kind": "storage#objects"}
        if page:
            out["items"] = [self.objects[bucket + "/" + n]["meta"] for n in page]
        if len(names) > size:
            out["nextPageToken"] = base64.urlsafe_b64encode(page[-1].encode()).decode()
        return 200, out, {}

    def delete(self, req):
        bucket, name, cur = self._lookup(req)
        if cur is None:
            raise storage_err(404, "No such object: %s/%s" % (bucket, name), "notFound")
        self._check(req, cur)
        del self.objects[bucket + "/" + name]
        return 204, b"", {}

    def _parse_multipart(self, req):
        ctype = req.header("Content-Type") or ""
        if "boundary=" not in ctype:
            raise storage_err(400, "Missing boundary in multipart/related Content-Type.", "invalid")
        boundary = ctype.split("boundary=", 1)[1].split(";")[0].strip().strip('"').encode()
        parts = req.body.split(b"--" + boundary)
        out = []
        for p in parts[1:]:
            if p.startswith(b"--"):
                break
            p = p[2:] if p.startswith(b"\r\n") else p.lstrip(b"\n")
            head, sep, body = p.partition(b"\r\n\r\n")
            if not sep:
                head, sep, body = p.partition(b"\n\n")
            if body.endswith(b"\r\n"):
                body = body[:-2]
            elif body.endswith(b"\n"):
                body = body[:-1]
            hdrs = {}
            for line in head.decode("latin-1").splitlines():
                if ":" in line:
                    k, v = line.split(":", 1)
                    hdrs[k.strip().lower()] = v.strip()
            out.append((hdrs, body))
        if len(out) != 2:
            raise storage_err(400, "Multipart upload must have exactly two parts (metadata and media).", "invalid")
        return out

    def insert(self, req):
        bucket = req.segments[4]
        ut = req.q("uploadType")
        if ut == "multipart":
            (mh, mb), (dh, data) = self._parse_multipart(req)
            try:
                meta_in = json.loads(mb or b"{}")
            except ValueError:
                raise storage_err(400, "Metadata part is not valid JSON.", "parseError")
            ctype = meta_in.get("contentType") or dh.get("content-type") or "application/octet-stream"
        elif ut == "media":
            meta_in = {}
            data = req.body
            ctype = req.header("Content-Type") or "application/octet-stream"
        elif ut == "resumable":
            raise storage_err(400, "uploadType=resumable is not supported by this fake.", "invalid")
        else:
            raise storage_err(400, "Upload requests must include an uploadType URL parameter and a URL path "
                              "beginning with /upload/", "wrongUrlForUpload")
        name = req.q("name") or meta_in.get("name")
        if not name:
            raise storage_err(400, "Required", "required")
        key = bucket + "/" + name
        cur = self.objects.get(key)
        self._check(req, cur)
        return self._store(bucket, name, data, ctype, meta_in)

    def compose(self, req):
        """objects.compose: the destination is the sources' data, concatenated here (at most 32
        sources, in this bucket; a source's generation, when given, must be its current one).
        Like Google's, a composite object has a crc32c and a componentCount but no md5Hash."""
        bucket, name = req.segments[3], req.segments[5]
        body = req.json() or {}
        srcs = body.get("sourceObjects") or []
        if not srcs or len(srcs) > 32:
            raise storage_err(400, "The number of source components provided (%d) is not between 1 and 32."
                              % len(srcs), "invalid")
        data = b""
        for src in srcs:
            cur = self.objects.get(bucket + "/" + str(src.get("name")))
            if cur is None or ("generation" in src and str(src["generation"]) != cur["meta"]["generation"]):
                raise storage_err(404, "Object %s (generation: %s) not found."
                                  % (src.get("name"), src.get("generation", "")), "notFound")
            pre = (src.get("objectPreconditions") or {}).get("ifGenerationMatch")
            if pre is not None and str(pre) != cur["meta"]["generation"]:
                raise ApiError(412, "At least one of the pre-conditions you specified did not hold.", errors=[{
                    "domain": "global", "reason": "conditionNotMet",
                    "message": "At least one of the pre-conditions you specified did not hold."}])
            data += base64.b64decode(cur["data"])
        self._check(req, self.objects.get(bucket + "/" + name))
        dst = body.get("destination") or {}
        status, meta, hdrs = self._store(bucket, name, data, dst.get("contentType") or "application/octet-stream",
                                         dst)
        del meta["md5Hash"]
        meta["componentCount"] = len(srcs)
        return status, meta, hdrs

    def _store(self, bucket, name, data, ctype, meta_in):
        """A new generation of bucket/name holding data; its metadata."""
        key = bucket + "/" + name
        self.gen += 1 + secrets.randbelow(1000)
        now = common.fmt_ts(self.world.now())[:-4] + "Z"
        gen = str(self.gen)
        md5 = base64.b64encode(hashlib.md5(data).digest()).decode()
        crc = base64.b64encode(crc32c(data).to_bytes(4, "big")).decode()
        enc = name.replace("/", "%2F")
        meta = {"kind": "storage#object", "id": "%s/%s/%s" % (bucket, name, gen),
                "selfLink": "https://www.googleapis.com/storage/v1/b/%s/o/%s" % (bucket, enc),
                "mediaLink": "https://storage.googleapis.com/download/storage/v1/b/%s/o/%s?generation=%s&alt=media"
                             % (bucket, enc, gen),
                "name": name, "bucket": bucket, "generation": gen, "metageneration": "1", "contentType": ctype,
                "storageClass": "STANDARD", "size": str(len(data)), "md5Hash": md5, "crc32c": crc,
                "etag": base64.b64encode(hashlib.md5(gen.encode()).digest()[:8]).decode().rstrip("="),
                "timeCreated": now, "updated": now, "timeStorageClassUpdated": now}
        if meta_in.get("metadata"):
            meta["metadata"] = meta_in["metadata"]
        for k in ("cacheControl", "contentEncoding", "contentDisposition", "contentLanguage", "customTime"):
            if k in meta_in:
                meta[k] = meta_in[k]
        self.objects[key] = {"meta": meta, "data": base64.b64encode(data).decode()}
        return 200, meta, {}
