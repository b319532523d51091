"""The quota check is advice, and a pending request is no grant.

Cloud Quotas gives a preference no grantedValue while it is reconciling:
the plan shows it as `pending` (the value asked for, how long ago), and a
job whose fit depends on Google's decision is neither fitting nor short
but unknown. When quota infos cannot be read (403 PERMISSION_DENIED, 403
SERVICE_DISABLED, 404) a jobs-only stack still plans: one warning, the
quota column unknown with the reason, exit 1 only under -fail-on=quota.
A failing list of jobs stays an error. Faults come from the fake's generic
hook (POST /_fake/faults, with `reason` for Google's 403 bodies).
"""
import json
import os

from harness import PROJECT, REGION, FakeTestCase, job_yaml

QUOTA = ("---\nkind: QuotaPreference\nname: l4-training\nservice: aiplatform.googleapis.com\n"
         "quotaId: CustomModelTrainingL4GPUsPerProjectPerRegion\ndimensions: {region: %s}\n"
         "preferredValue: 16\ncontactEmail: ml-infra@example.com\n" % REGION)

USAGE = ("  (in use: this stack's runs only; Cloud Quotas does not report usage, so jobs of other stacks in "
         "the project are not counted)")
WARN = "quota limits not read, so no job's fit is known (the quota check is advice: the plan goes on): "
HEAD = "    GPU          class                    in use   adds  limit    free after"


def section(out, title):
    """The lines of a plan section, from its title to the next blank line."""
    lines = out.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith(title))
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def has_section(out, title):
    return any(l.startswith(title) for l in out.splitlines())


class PendingQuota(FakeTestCase):

    def setUp(self):
        super().setUp()
        # 1 on-demand L4 in force; the request for 16 stays reconciling (no grantedValue)
        self.fake.post("/_fake/quota", {"region": REGION, "accelerator_type": "NVIDIA_L4",
                                        "preemptible": False, "limit": 1})
        self.fake.post("/_fake/quota-grants", {"mode": "pending"})

    def pref(self):
        [q] = self.fake.get("/_fake/quota-preferences")["quotaPreferences"]
        return q

    def test_a_pending_preference_plans_pending_and_its_jobs_fit_unknown(self):
        self.repo.write({"q": QUOTA})
        self.assertEqual(self.repo.apply().code, 0)
        q = self.pref()
        # as Google serves it: reconciling, no grantedValue
        self.assertEqual((q["reconciling"], "grantedValue" in q["quotaConfig"]), (True, False), q)
        self.fake.advance(2 * 3600 + 5 * 60)
        now = self.fake.get("/_fake/clock")["now"]
        self.repo.write({"q": QUOTA, "a": job_yaml("a"), "b": job_yaml("b")})
        r = self.repo.plan("-detailed-exitcode", env={"VX_NOW": now})
        self.assertEqual(r.code, 2, r)
        lines = r.out.splitlines()
        at = lines.index("      quota.l4-training pending")
        self.assertEqual(lines[at + 1:at + 3], [
            "        aiplatform.googleapis.com CustomModelTrainingL4GPUsPerProjectPerRegion (region=us-central1): 16",
            "        16 requested, pending for 2h05m: nothing granted yet (Google has not decided)",
        ])
        self.assertEqual(section(r.out, "Quota"), [
            "Quota (GPUs; in use: this stack's active runs that stay):",
            "  us-central1",
            HEAD,
            "    L4           on-demand                     0      2  1 in force, 16 requested, pending -1 "
            "(fit unknown)",
            "  (unknown: quota.l4-training asks for 16 and Google has not decided (no grantedValue yet))",
            USAGE,
        ])
        # job.a fits the 1 in force whatever Google decides; job.b only if it grants
        self.assertEqual(section(r.out, "Warnings"), [
            "Warnings:",
            "  job.b: fit unknown: needs 1 on-demand L4 in us-central1, limit 1 in force, 1 in use or started "
            "before it; quota.l4-training asks for 16 and Google has not decided (no grantedValue yet)",
        ])
        self.assertIn("Plan: 2 to create. 0 unchanged.", r.out.splitlines(), r)
        js = self.repo.plan("-format", "json", env={"VX_NOW": now})
        self.assertEqual(js.code, 0, js)
        plan = json.loads(js.out)
        [act] = [a for a in plan["actions"] if a["address"] == "quota.l4-training"]
        self.assertEqual((act["action"], act["reason"], act["before"]["value"], act["after"]["value"]),
                         ("pending", "16 requested, pending for 2h05m: nothing granted yet (Google has not "
                          "decided)", 16, 16))
        [row] = plan["quota"]
        self.assertEqual({k: row[k] for k in ("limit", "requested", "granted", "pending", "fits", "unknown")},
                         {"limit": 1, "requested": 16, "granted": None, "pending": True, "fits": False,
                          "unknown": "quota.l4-training asks for 16 and Google has not decided (no "
                                     "grantedValue yet)"})
        # fails the plan only when asked to
        r = self.repo.plan("-fail-on=quota", env={"VX_NOW": now})
        self.assertEqual(r.code, 1, r)
        self.assertEqual(section(r.out, "Errors"), [
            "Errors (the plan cannot be applied):",
            "  job.b: fit unknown: needs 1 on-demand L4 in us-central1, limit 1 in force, 1 in use or started "
            "before it; quota.l4-training asks for 16 and Google has not decided (no grantedValue yet) "
            "(-fail-on=quota)",
        ])
        # once granted, the preference is done and both jobs fit
        self.fake.post("/_fake/quota-grants", {"mode": "full"})
        self.repo.write({"q": QUOTA.replace("16", "17")})
        self.assertEqual(self.repo.apply().code, 0)
        self.repo.write({"q": QUOTA.replace("16", "17"), "a": job_yaml("a"), "b": job_yaml("b")})
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(section(r.out, "Quota")[3],
                         "    L4           on-demand                     0      2  17       15")
        self.assertFalse(has_section(r.out, "Warnings"), r.out)


DENIED = ("quotas: listing quota infos of aiplatform.googleapis.com: PERMISSION_DENIED: Permission "
          "'cloudquotas.quotas.get' denied on resource '//cloudquotas.googleapis.com/projects/vx-e2e/locations/"
          "global/services/aiplatform.googleapis.com/quotaInfos' (or it may not exist). (the caller lacks "
          "cloudquotas.quotas.get for projects.locations.services.quotaInfos.list: grant "
          "roles/cloudquotas.viewer on the project)")
# The words after the server's (the hint in parentheses) are providers/gcp/gerror.c's.


class QuotaAdvice(FakeTestCase):

    def setUp(self):
        super().setUp()
        self.repo.write({"a": job_yaml("a")})

    def fault(self, rpc, status=403, reason=None):
        f = {"error_rate": 1, "statuses": [status], "methods": [rpc]}
        if reason:
            f["reason"] = reason
        self.fake.post("/_fake/faults", f)

    def unknown_row(self, out, why):
        self.assertEqual(section(out, "Quota"), [
            "Quota (GPUs; in use: this stack's active runs that stay):",
            "  us-central1",
            HEAD,
            "    L4           on-demand                     0      1  unknown  unknown",
            "  (unknown: quota limits not read: %s)" % why,
            USAGE,
        ])

    def test_permission_denied_is_a_warning(self):
        self.fault("ListQuotaInfos", reason="IAM_PERMISSION_DENIED")
        why = DENIED
        r = self.repo.plan("-detailed-exitcode")
        self.assertEqual(r.code, 2, r)
        self.assertEqual(self.block(r.out), ["+   job.a create", "g2-standard-4 ×1, 1×L4, STANDARD in us-central1",
                                             "new job"])
        self.unknown_row(r.out, why)
        self.assertEqual(section(r.out, "Warnings"), [
            "Warnings:",
            "  " + WARN + why,
        ])
        js = self.repo.plan("-format", "json")
        self.assertEqual(js.code, 0, js)
        plan = json.loads(js.out)
        self.assertEqual(plan["warnings"], [WARN + why])
        [row] = plan["quota"]
        self.assertEqual((row["limit"], row["fits"], row["unknown"]), (None, False, "quota limits not read: " + why))
        # the apply goes on too, and starts the job
        a = self.repo.apply()
        self.assertEqual(a.code, 0, a)
        self.assertEqual(len(self.active("a")), 1)

    def test_fail_on_quota_fails_the_plan(self):
        self.fault("ListQuotaInfos", reason="IAM_PERMISSION_DENIED")
        why = DENIED
        r = self.repo.plan("-fail-on=quota")
        self.assertEqual(r.code, 1, r)
        self.unknown_row(r.out, why)
        self.assertEqual(section(r.out, "Errors"), [
            "Errors (the plan cannot be applied):",
            "  quota limits not read, so no job's fit is known: %s (-fail-on=quota)" % why,
        ])
        self.assertFalse(has_section(r.out, "Warnings"), r.out)
        self.repo.write(extra_stack="failOn: [quota]\n")
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(section(r.out, "Errors")[1],
                         "  quota limits not read, so no job's fit is known: %s (failOn: [quota])" % why)
        a = self.repo.apply("-fail-on=quota")
        self.assertEqual(a.code, 1, a)
        self.assertEqual(self.live_jobs(), [])

    def test_service_disabled_is_a_warning(self):
        self.fault("ListQuotaInfos", reason="SERVICE_DISABLED")
        # Google names the project by its number
        num = self.fake.post("/_fake/projects", {"id": PROJECT, "number": "123456789012"})[PROJECT]
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        [warning] = section(r.out, "Warnings")[1:]
        why = ("quotas: listing quota infos of aiplatform.googleapis.com: PERMISSION_DENIED: Cloud Quotas API has "
               "not been used in project %s before or it is disabled. Enable it by visiting https://console."
               "developers.google.com/apis/api/cloudquotas.googleapis.com/overview?project=%s then retry. If you "
               "enabled this API recently, wait a few minutes for the action to propagate to our systems and "
               "retry. (enable the API: gcloud services enable cloudquotas.googleapis.com --project %s)"
               % (num, num, num))
        self.assertEqual(warning, "  " + WARN + why)
        self.unknown_row(r.out, why)
        r = self.repo.plan("-fail-on=quota")
        self.assertEqual(r.code, 1, r)

    def test_not_found_is_a_warning(self):
        self.fault("ListQuotaInfos", status=404)
        why = ("quotas: listing quota infos of aiplatform.googleapis.com: NOT_FOUND: Injected fault. (Cloud Quotas "
               "does not know project vx-e2e or this service: check the Stack's project)")
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(section(r.out, "Warnings"), [
            "Warnings:",
            "  " + WARN + why,
        ])
        self.unknown_row(r.out, why)
        self.assertEqual(self.repo.plan("-fail-on=quota").code, 1)

    def test_one_warning_for_many_jobs(self):
        self.repo.write({n: job_yaml(n) for n in ("a", "b", "c")})
        self.fault("ListQuotaInfos", status=404)
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(section(r.out, "Warnings"), [
            "Warnings:",
            "  " + WARN + "quotas: listing quota infos of aiplatform.googleapis.com: NOT_FOUND: Injected fault. "
            "(Cloud Quotas does not know project vx-e2e or this service: check the Stack's project)",
        ])

    def test_other_failures_stay_errors(self):
        # 401 (after vx's one retry with a fresh token) and 500 (after the retries) are no advice
        for status in (401, 500):
            self.fault("ListQuotaInfos", status=status)
            r = self.repo.plan(env={"VX_TIMEOUT": "5"})
            self.assertEqual(r.code, 1, (status, r))
            self.assertEqual(r.out, "", r)
            self.assertTrue(r.err.startswith("vx: quotas: listing quota infos of aiplatform.googleapis.com: "),
                            (status, r.err))

    def test_a_jobs_list_refused_stays_an_error(self):
        self.fault("ListCustomJobs", reason="IAM_PERMISSION_DENIED")
        r = self.repo.plan()
        self.assertEqual(r.code, 1, r)
        self.assertEqual(r.out, "", r)
        self.assertTrue(r.err.startswith(
            "vx: reading live jobs in us-central1: vertex: listing jobs in us-central1: PERMISSION_DENIED: Permission "
            "'aiplatform.customJobs.list' denied on resource '//aiplatform.googleapis.com/projects/vx-e2e/"
            "locations/us-central1/customJobs' (or it may not exist)."), r.err)

    def test_a_stack_without_reservations_reads_none(self):
        # No reservation declared or recorded: no reservations list to be refused, so a
        # refusal of it cannot stop the plan.
        self.fault("ListReservations", reason="IAM_PERMISSION_DENIED")
        r = self.repo.plan()
        self.assertEqual(r.code, 0, r)
        self.assertFalse(has_section(r.out, "Warnings"), r.out)
        self.assertEqual(self.fake.rpc_count("ListReservations"), 0)


if __name__ == "__main__":
    import unittest
    unittest.main()
