/*
 * What a recorded booking held, for vx report (struct kind's held_record
 * slot; docs/future-reservations.md, "Money and the end of the window"):
 * its VMs only inside its window, none when Google delivered nothing
 * (declined, failed, cancelled), priced at Compute Engine's on-demand rate
 * in its zone, an estimate: Google has not published calendar-mode prices
 * in what we read.
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "reconcile/capacity.h"
#include "reconcile/kind_future_internal.h"
#include "reconcile/load/machines.h"
#include "state/state.h"
#include "util/timefmt.h"
#include "util/banned.h"

static const char *json_string(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int64_t json_time(const cJSON *o, const char *key)
{
	const char *s = json_string(o, key);
	int64_t ms = 0;

	return s && vx_time_parse(&ms, s, 0) == 0 ? ms : 0;
}

void future_held_record(const struct state_record *rec, const struct state_run *run, const struct prices *p,
			struct kind_held_shape *out)
{
	cJSON *spec = rec && rec->spec_json ? cJSON_Parse(rec->spec_json) : NULL;
	const char *mt = json_string(spec, "machineType"), *at = json_string(spec, "acceleratorType");
	const cJSON *ac = cJSON_GetObjectItemCaseSensitive(spec, "acceleratorCount");
	const struct machines_gpu *gpu = at ? machines_gpu_by_compute(at) : NULL;
	int64_t per = cJSON_IsNumber(ac) ? (int64_t)ac->valuedouble : 0;

	out->vm_rate = -1;
	snprintf(out->machine_type, sizeof(out->machine_type), "%s", mt ? mt : "");
	/* The report names GPUs as Vertex AI does. */
	if (gpu || at)
		snprintf(out->accelerator, sizeof(out->accelerator), "%s", gpu ? gpu->vertex : at);
	out->accelerator_count = at ? per : 0;
	out->window_start_ms = json_time(spec, "start");
	out->window_end_ms = json_time(spec, "end");
	out->holds_nothing = run->state && fr_status_dead(run->state);
	if (p && mt)
		out->vm_rate = prices_vm_rate(p, run->region, mt, at, per, &out->estimate);
	out->estimate = 1;
	cJSON_Delete(spec);
}
