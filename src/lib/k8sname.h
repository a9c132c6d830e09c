/* k8sname: Kubernetes' rules for object names, with Kubernetes' own words.
 * Owns: the DNS-1123 label and subdomain checks (k8s.io/apimachinery's IsDNS1123Label and
 * IsDNS1123Subdomain), the "Invalid value" / "Required value" messages that go with them,
 * and generateName's shape (prefix cut to 58 characters plus 5 random characters).
 * Pure: no I/O, no clock, no allocation; randomness is the caller's.
 *
 * Errors follow the code base's split: gx_err.field holds the field ("metadata.name"),
 * gx_err.msg the rest of Kubernetes' line ("Invalid value: \"a/b\": a lowercase RFC 1123
 * label must consist of ..."). A value too long to echo in full is echoed cut, with "..."
 * inside the quotes, so the message still fits gx_err.msg whole. */
#ifndef GX_K8SNAME_H
#define GX_K8SNAME_H
#include <stddef.h>
#include <stdint.h>
#include "lib/err.h"

#define GX_K8S_LABEL_MAX 63        /* DNS1123LabelMaxLength */
#define GX_K8S_SUBDOMAIN_MAX 253   /* DNS1123SubdomainMaxLength */
#define GX_K8S_GEN_SUFFIX 5        /* generateName's random characters */
#define GX_K8S_GEN_PREFIX_MAX (GX_K8S_LABEL_MAX - GX_K8S_GEN_SUFFIX)   /* maxGeneratedNameLength: 58 */
/* The alphabet of generated suffixes (no vowels, no 0, 1, 3: no words, no look-alikes). */
#define GX_K8S_GEN_ALPHABET "bcdfghjklmnpqrstvwxz2456789"

/* Does s match [a-z0-9]([-a-z0-9]*[a-z0-9])? in at most 63 characters? */
int gx_k8s_is_label(const char *s);
/* Does s match label('.'label)* in at most 253 characters? */
int gx_k8s_is_subdomain(const char *s);

/* What is wrong with s as a label of at most max characters (max <= 63), in Kubernetes'
 * words ("must be no more than 63 characters", "must not contain dots", the regex
 * sentence); NULL when nothing. When both the length and the form are wrong, the length
 * comes first, as Kubernetes lists it. buf (GX_K8S_PROBLEM_MAX bytes) holds the length message. */
#define GX_K8S_PROBLEM_MAX 64
const char *gx_k8s_label_problem(const char *s, size_t max, char *buf, size_t n);
/* The same for a subdomain of at most max characters (max <= 253). */
const char *gx_k8s_subdomain_problem(const char *s, size_t max, char *buf, size_t n);

/* Fill err (422, field) with `Invalid value: "VALUE": DETAIL` and return -1. */
int gx_k8s_invalid(gx_err *err, const char *field, const char *value, const char *detail);
/* Check s as a label / subdomain of at most max characters; 0, or -1 with err as above.
 * A missing (NULL) value is `Required value`. */
int gx_k8s_check_label(const char *s, size_t max, const char *field, gx_err *err);
int gx_k8s_check_subdomain(const char *s, size_t max, const char *field, gx_err *err);

/* A name for generateName `prefix`: the prefix cut to 58 characters, then 5 characters of
 * GX_K8S_GEN_ALPHABET drawn by uniform(27) (which returns 0..26, e.g. libsodium's
 * randombytes_uniform). out needs 64 bytes; returns 0, or -1 when n is smaller. */
int gx_k8s_generate_name(const char *prefix, uint32_t (*uniform)(uint32_t upper), char *out, size_t n);

#endif
