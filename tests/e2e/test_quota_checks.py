"""Quota preferences: the decrease check against what is in force, and drift.

A decrease of more than 10% is Cloud Quotas' safety check on the value in
force (grantedValue, else the quota's limit), not on the previous
preferredValue: asking for 12 while 8 is in force and 16 is pending is an
increase. A preference changed outside vx (console, gcloud) is drift, shown
and counted as reservations' is, and the plan brings it back.
"""
import json
import re
import urllib.request

from harness import PROJECT, REGION, FakeTestCase

TOKEN = "outsider-token"


def quota_yaml(value, extra=""):
    return ("---\nkind: QuotaPreference\nname: l4-training\nservice: aiplatform.googleapis.com\n"
            "quotaId: CustomModelTrainingL4GPUsPerProjectPerRegion\ndimensions: {region: %s}\n"
            "preferredValue: %d\ncontactEmail: ml-infra@example.com\n%s" % (REGION, value, extra))


class QuotaChecks(FakeTestCase):

    def setUp(self):
        super().setUp()
        # 8 L4s in force (the fake starts at 1000)
        self.fake.post("/_fake/quota", {"region": REGION, "accelerator_type": "NVIDIA_L4",
                                        "preemptible": False, "limit": 8})
        self.fake.post("/_fake/tokens", {"token": TOKEN})

    def write(self, value, extra=""):
        self.repo.jobs = {"q": quota_yaml(value, extra)}
        self.repo.write()

    def pref(self):
        got = self.fake.get("/_fake/quota-preferences")
        items = got.get("quotaPreferences", got) if isinstance(got, dict) else got
        [q] = items
        return q

    def rpcs(self, *names):
        log = self.fake.get("/_fake/requests?log=1000")["log"]
        return [e["rpc"] for e in log if e["rpc"] in names]

    def section(self, out, title):
        lines = out.splitlines()
        i = lines.index(title)
        body = []
        for l in lines[i + 1:]:
            if not l.strip():
                break
            body.append(l)
        return body

    def actions(self, out):
        action = re.compile(r"^  \S+ +(job|reservation|quota)\.[^ ]+ [a-z]+$")
        return [l for l in out.splitlines() if action.match(l)]

    def summary(self, out):
        return [l for l in out.splitlines() if l.startswith("Plan: ")]

    def test_decrease_is_measured_from_the_value_in_force(self):
        self.fake.post("/_fake/quota-grants", {"mode": "pending"})
        self.write(16)
        self.assertEqual(self.repo.apply().code, 0)
        q = self.pref()
        self.assertEqual((q["quotaConfig"]["preferredValue"], q["quotaConfig"].get("grantedValue"),
                          q["reconciling"]), ("16", None, True))
        # 12 is less than the 16 pending but more than the 8 in force: an increase, no safety check
        self.write(12)
        r = self.repo.plan()
        self.assertEqual((r.code, self.actions(r.out)), (0, ["  ~   quota.l4-training update"]), r)
        self.assertIn("        preferredValue 16 -> 12", r.out.splitlines(), r)
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(self.pref()["quotaConfig"]["preferredValue"], "12")
        self.assertEqual(self.rpcs("CreateQuotaPreference", "UpdateQuotaPreference"),
                         ["CreateQuotaPreference", "UpdateQuotaPreference"])
        # 7 is more than 10% under the 8 in force: refused, naming the value it is measured from
        self.write(7)
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(self.section(r.out, "Errors (the plan cannot be applied):"), [
            "  quota.l4-training: preferredValue 7 is more than 10% below the 8 in force (the quota's "
            "limit; 12 requested), which Cloud Quotas refuses unless asked: set ignoreSafetyChecks: true "
            "in the declaration if that decrease is meant, and remove it once applied"], r.out)
        # once granted, grantedValue is what is in force
        self.fake.post("/_fake/quota-grants", {"mode": "full"})
        self.write(12, extra="ignoreSafetyChecks: true\n")
        self.fake.post("/_fake/quota-grants", {"mode": "partial", "fraction": 0.9})
        self.write(20)
        self.assertEqual(self.repo.apply().code, 0)
        q = self.pref()
        self.assertEqual((q["quotaConfig"]["preferredValue"], q["quotaConfig"].get("grantedValue")), ("20", "18"))
        self.write(17)
        r = self.repo.plan()
        self.assertEqual((r.code, self.actions(r.out)), (0, ["  ~   quota.l4-training update"]), r)
        self.write(16)
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(self.section(r.out, "Errors (the plan cannot be applied):"), [
            "  quota.l4-training: preferredValue 16 is more than 10% below the 18 in force (granted; 20 "
            "requested), which Cloud Quotas refuses unless asked: set ignoreSafetyChecks: true in the "
            "declaration if that decrease is meant, and remove it once applied"], r.out)

    def outside(self, value):
        name = "projects/%s/locations/global/quotaPreferences/l4-training" % PROJECT
        req = urllib.request.Request(
            "%s/v1/%s?updateMask=quotaConfig.preferredValue&ignoreSafetyChecks=QUOTA_DECREASE_PERCENTAGE_TOO_HIGH"
            % (self.fake.url, name),
            data=json.dumps({"quotaConfig": {"preferredValue": str(value)}}).encode(), method="PATCH",
            headers={"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=30).read()

    def test_a_change_outside_vx_is_drift(self):
        self.write(16)
        self.assertEqual(self.repo.apply().code, 0)
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual((r.code, self.summary(r.out)), (0, ["Plan: no changes. 1 unchanged."]), r)
        # someone lowers it with gcloud (a decrease: the way back up is no safety check)
        self.outside(12)
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual((r.code, self.actions(r.out)), (2, ["  ~   quota.l4-training update"]), r)
        self.assertEqual(self.section(r.out, "Drift (changed outside vx):"), [
            "  ! quota.l4-training: preferredValue changed outside vx: 16 recorded, 12 live -> update"], r.out)
        self.assertEqual(self.summary(r.out), ["Plan: 1 to update. 0 unchanged. 1 changed outside vx."], r.out)
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(self.pref()["quotaConfig"]["preferredValue"], "16")
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual((r.code, self.summary(r.out)), (0, ["Plan: no changes. 1 unchanged."]), r)
        # changed outside to what the declaration then says too: nothing to do, nothing to report
        self.outside(20)
        self.write(20)
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual((r.code, self.summary(r.out)), (0, ["Plan: no changes. 1 unchanged."]), r)
        self.assertNotIn("Drift (changed outside vx):", r.out.splitlines(), r)

    def test_raised_outside_vx_then_a_refused_decrease_is_drift_first(self):
        # Raised to 64 outside vx, 16 declared: the plan said only the error about a refused
        # decrease and "Plan: no changes". The change outside comes first, counted, then what
        # applying the declaration would need.
        self.write(16)
        self.assertEqual(self.repo.apply().code, 0)
        self.outside(64)
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(self.actions(r.out), ["  ~   quota.l4-training update"], r.out)
        self.assertIn("        preferredValue 64 -> 16 (a decrease Cloud Quotas refuses without "
                      "ignoreSafetyChecks: see the errors)", r.out.splitlines(), r.out)
        self.assertEqual(self.section(r.out, "Drift (changed outside vx):"), [
            "  ! quota.l4-training: preferredValue changed outside vx: 16 recorded, 64 live -> update"], r.out)
        self.assertEqual(self.section(r.out, "Errors (the plan cannot be applied):"), [
            "  quota.l4-training: preferredValue was changed outside vx to 64 (16 recorded); applying the "
            "declared 16 would lower the 64 in force (granted) by more than 10%, which Cloud Quotas refuses "
            "unless asked: declare 64 to keep the change, or set ignoreSafetyChecks: true in the declaration "
            "to go back to 16 (and remove it once applied)"], r.out)
        self.assertEqual(self.summary(r.out), ["Plan: 1 to update. 0 unchanged. 1 changed outside vx."], r.out)
        lines = r.out.splitlines()
        self.assertLess(lines.index("Drift (changed outside vx):"),
                        lines.index("Errors (the plan cannot be applied):"))
        # Nothing was sent: an apply of this plan is refused.
        self.assertEqual(self.repo.apply().code, 1)
        self.assertEqual(self.pref()["quotaConfig"]["preferredValue"], "64")
        # Going back, as the error says.
        self.write(16, extra="ignoreSafetyChecks: true\n")
        self.assertEqual(self.repo.apply().code, 0)
        self.assertEqual(self.pref()["quotaConfig"]["preferredValue"], "16")
