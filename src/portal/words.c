/* words: the scheduler's reasons, messages and condition types in plain words.
 * Owns: the phrases "My work" and a workload's history show ("Waiting for quota: needs
 * 2 GPUs, team-a has 1 free" instead of "queue team-a uses 2 of 1", "Waiting for quota"
 * instead of "QuotaReserved (not yet)").
 * Must not: invent facts: a message it does not recognise is shown as the scheduler
 * wrote it; the scheduler's own words stay available (Details) for those who know Kueue. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "portal/portal_int.h"

const char *gx_portal_plain_reason(const char *reason)
{
    static const struct { const char *r, *text; } T[] = {
        {"WaitingForQuota", "Waiting for your team's GPU quota to free up"},
        {"BorrowingLimitReached", "Waiting: your team already borrows as much as it may"},
        {"NoDeviceFits", "Quota is available, but no GPU on the nodes is free yet"},
        {"ExceedsMaxQuota", "Larger than your team can ever get: ask for less, or ask an admin for more quota"},
        {"Inadmissible", "Cannot start: the queue is not set up for this (ask an admin)"},
        {"NoMatchingFlavor", "No GPU type in your queue fits this request"},
        {"WaitingForPreemption", "Making room: lower-priority work is being stopped"},
        {"Evicted", "Was stopped to make room and waits to run again"},
        {"Preempted", "Was stopped for more important work and waits to run again"},
        {NULL, NULL}};
    for (int i = 0; reason && T[i].r; i++)
        if (!strcmp(reason, T[i].r)) return T[i].text;
    return "Waiting for the scheduler to consider it";
}

const char *gx_portal_plain_condition(const char *type, int status)
{
    static const struct { const char *t, *yes, *no; } T[] = {
        {"QuotaReserved", "GPUs reserved from the team's quota", "Waiting for quota"},
        {"Admitted", "Admitted: it may start", "Not admitted yet"},
        {"PodsReady", "Its processes started", "Its processes are not running yet"},
        {"Evicted", "Stopped to make room", "No longer stopped"},
        {"Preempted", "Stopped for more important work", "No longer preempted"},
        {"Requeued", "Back in line", "Not back in line yet"},
        {"Finished", "Finished", "Not finished"},
        {"Deactivated", "Stopped (cancelled or deactivated)", "Active again"},
        {NULL, NULL, NULL}};
    for (int i = 0; type && T[i].t; i++)
        if (!strcmp(type, T[i].t)) return status ? T[i].yes : T[i].no;
    return type ? type : "";
}

/* "nvidia.com/gpu" counted n: "GPU"/"GPUs"; any other resource keeps its name. */
static const char *res_words(const char *res, const char *count)
{
    if (!strcmp(res, "nvidia.com/gpu")) return !strcmp(count, "1") ? "GPU" : "GPUs";
    return res;
}

static int whole(const char *s, long long *v)
{
    char *e;
    *v = strtoll(s, &e, 10);
    return *s && !*e;
}

int gx_portal_plain_message(const char *msg, char *out, size_t n)
{
    char need[32], res[128], flv[64], q[64], used[32], nom[32], rest[256] = "";
    long long u, m;
    if (!msg) msg = "";
    /* engine_view.c: "waiting for N RES in flavor F: queue Q uses U of M[, cohort ...]" */
    if (sscanf(msg, "waiting for %31s %127s in flavor %63[^:]: queue %63s uses %31s of %31[^, ]%255[^\n]", need, res, flv, q,
               used, nom, rest) >= 6) {
        int k;
        if (whole(used, &u) && whole(nom, &m))
            k = snprintf(out, n, "Waiting for quota: needs %s %s, %s has %lld free (of %lld)", need, res_words(res, need), q,
                         m > u ? m - u : 0, m);
        else
            k = snprintf(out, n, "Waiting for quota: needs %s %s, %s already uses %s of %s", need, res_words(res, need), q, used,
                         nom);
        char co[64], lend[32];
        if (k > 0 && (size_t)k < n && sscanf(rest, ", cohort %63s can lend %31s", co, lend) == 2)
            k += snprintf(out + k, n - (size_t)k, "; teams sharing with it (cohort %s) can lend %s", co, lend);
        else if (k > 0 && (size_t)k < n && strstr(rest, "borrow the rest"))
            k += snprintf(out + k, n - (size_t)k, "; other teams have borrowed the rest of the shared quota");
        if (k > 0 && (size_t)k < n && strstr(rest, "borrowingLimit reached"))
            snprintf(out + k, n - (size_t)k, "; it already borrows as much as it may");
        return 1;
    }
    char ps[64], ever[32];
    if (sscanf(msg, "pod set %63s needs %31s %127s in flavor %63[^,], more than ClusterQueue %63s can ever get (%31[^)])", ps, need,
               res, flv, q, ever) == 6) {
        snprintf(out, n, "Too big to ever start: needs %s %s, %s can never have more than %s", need, res_words(res, need), q, ever);
        return 1;
    }
    if (sscanf(msg, "quota fits but no node has %31s free %127s", need, res) == 2) {
        snprintf(out, n, "The quota is there, but no node has %s %s free right now", need, res_words(res, need));
        return 1;
    }
    snprintf(out, n, "%s", msg);
    return 0;
}
