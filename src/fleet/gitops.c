/* fleet/gitops: gx_git_commit_push, the git half of publishing (libgit2, blocking).
 * The hub owns a working clone per cluster (DATA/fleet/<cluster>/repo). Each call:
 *  1. opens it, or creates it with origin = g->repo (init + fetch rather than clone, so
 *     that an empty remote, or one without g->branch yet, needs no special path);
 *  2. fetches g->branch and brings the local branch up to date: a fast-forward, or,
 *     when the remote moved while local commits were unpushed (a push that failed
 *     earlier), those commits replayed onto the remote's tip. Replaying is safe because
 *     the hub is the only writer of its files: a commit of ours is "these paths now hold
 *     these blobs / are gone", which applies on any base;
 *  3. makes one commit of the changes (trees built in memory with
 *     git_tree_create_updated, which drops folders left empty), unless they change
 *     nothing, and checks the result out into the working tree (index and files);
 *  4. pushes whenever the local branch is ahead of the remote's, so that commits left
 *     by a failed push go out with the next call. A rejected push is fetched, replayed
 *     and pushed again, 3 pushes in all.
 * Remotes: a local path or file:// URL (a bare repository), https:// (or http:// without
 * credentials) with "username:token" from g->credentials_file, git://. ssh is refused
 * (docs/fleet.md "Publishing").
 * Owns: the libgit2 initialisation (once per process), the credentials while a call
 * runs (wiped before it returns).
 * Must not: run on the loop (publisher.c runs it on its thread); log anything; put the
 * token, or a URL's userinfo, in an error message. */
#include <errno.h>
#include <fcntl.h>
#include <git2.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fleet/fleet.h"
#include "lib/alloc.h"

#define PUSH_TRIES 3

typedef struct pub {
    const gx_fleet_git *g;
    const char *branch;
    char local_ref[300];        /* refs/heads/<branch> */
    char tracking_ref[300];     /* refs/remotes/origin/<branch> */
    char url[1024];             /* g->repo without userinfo: what messages show */
    char cred_path[PATH_MAX];
    char user[256];
    char token[1024];
    int have_cred;
    int cred_calls;             /* the credential callback's calls in this connection */
    git_repository *repo;
    git_remote *remote;         /* NULL: the working clone is the repository itself */
    char rejected[256];         /* a ref the remote refused, with its reason */
    char remote_said[256];      /* the remote's last sideband line (a hook's output) */
    int moved;                  /* the local branch moved: check it out before returning */
} pub;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static void init_libgit2(void) { git_libgit2_init(); }

/* Copy src into dst (n bytes) with every occurrence of secret replaced by "***": the
 * last guard that a token never reaches a message, whatever libgit2 put in its text. */
static void scrub(char *dst, size_t n, const char *src, const char *secret)
{
    size_t sl = secret ? strlen(secret) : 0, o = 0;
    for (const char *s = src; *s && o + 1 < n;) {
        if (sl && strncmp(s, secret, sl) == 0) {
            for (const char *r = "***"; *r && o + 1 < n; r++) dst[o++] = *r;
            s += sl;
        } else {
            dst[o++] = *s++;
        }
    }
    dst[o] = 0;
}

/* The URL with "user:password@" taken out of its authority, for messages. */
static void strip_userinfo(char *out, size_t n, const char *url)
{
    const char *scheme = strstr(url, "://");
    if (!scheme) { snprintf(out, n, "%s", url); return; }
    const char *auth = scheme + 3, *end = auth + strcspn(auth, "/?#"), *at = NULL;
    for (const char *c = auth; c < end; c++)
        if (*c == '@') at = c;
    if (!at) { snprintf(out, n, "%s", url); return; }
    snprintf(out, n, "%.*s%s", (int)(auth - url), url, at + 1);
}

/* The password part of a URL's userinfo ("" when none), scrubbed from messages too. */
static void url_password(char *out, size_t n, const char *url)
{
    out[0] = 0;
    const char *scheme = strstr(url, "://");
    if (!scheme) return;
    const char *auth = scheme + 3, *end = auth + strcspn(auth, "/?#"), *at = NULL;
    for (const char *c = auth; c < end; c++)
        if (*c == '@') at = c;
    const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
    if (colon && at - colon > 1) snprintf(out, n, "%.*s", (int)(at - colon - 1), colon + 1);
}

/* Fill err with "<what>: <libgit2's last error>", secrets scrubbed. */
static int git_fail(pub *p, gx_err *err, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int git_fail(pub *p, gx_err *err, const char *field, const char *fmt, ...)
{
    char what[1200], raw[2048], once[2048], pw[256], clean[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const git_error *e = git_error_last();
    snprintf(raw, sizeof raw, "%s: %s%s%s", what, e && e->message ? e->message : "failed",
             p->remote_said[0] ? " (remote said: " : "", p->remote_said[0] ? p->remote_said : "");
    if (p->remote_said[0]) strncat(raw, ")", sizeof raw - strlen(raw) - 1);
    scrub(once, sizeof once, raw, p->have_cred ? p->token : NULL);
    url_password(pw, sizeof pw, p->g->repo);
    scrub(clean, sizeof clean, once, pw[0] ? pw : NULL);
    return gx_errf(err, 500, field, "%s", clean);
}

/* "user@host:path" or an ssh:// URL: libgit2 could use ssh-agent, but nothing here can
 * test it (no sshd on the test machines), so it is refused rather than half-supported. */
static int is_ssh(const char *url)
{
    if (!strncmp(url, "ssh://", 6) || !strncmp(url, "git+ssh://", 10) || !strncmp(url, "ssh+git://", 10)) return 1;
    if (strstr(url, "://") || url[0] == '/' || url[0] == '.') return 0;
    size_t colon = strcspn(url, ":"), slash = strcspn(url, "/");
    return url[colon] == ':' && colon < slash;
}

/* g->credentials_file: one line "username:token", readable by its owner alone. */
static int read_credentials(pub *p, gx_err *err)
{
    const char *path = p->g->credentials_file;
    snprintf(p->cred_path, sizeof p->cred_path, "%s", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return gx_errf(err, 500, "git.credentialsFile", "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return gx_errf(err, 500, "git.credentialsFile", "%s: not a regular file", path);
    }
    if (st.st_mode & (S_IRGRP | S_IROTH)) {
        close(fd);
        return gx_errf(err, 500, "git.credentialsFile",
                       "%s: mode %04o lets other users read the token (chmod 600 it)", path,
                       (unsigned)(st.st_mode & 07777));
    }
    char buf[1400];
    ssize_t r = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (r < 0) return gx_errf(err, 500, "git.credentialsFile", "%s: %s", path, strerror(errno));
    buf[r] = 0;
    buf[strcspn(buf, "\r\n")] = 0;
    char *colon = strchr(buf, ':');
    int bad = !colon || colon == buf || !colon[1] || (size_t)(colon - buf) >= sizeof p->user ||
              strlen(colon + 1) >= sizeof p->token;
    if (!bad) {
        snprintf(p->user, sizeof p->user, "%.*s", (int)(colon - buf), buf);
        snprintf(p->token, sizeof p->token, "%s", colon + 1);
        p->have_cred = 1;
    }
    explicit_bzero(buf, sizeof buf);
    if (bad) return gx_errf(err, 500, "git.credentialsFile", "%s: want one line \"username:token\"", path);
    return 0;
}

/* libgit2 asks again after the server refuses what it was given: answer once per
 * connection, so that wrong credentials fail instead of looping. */
static int cred_cb(git_credential **out, const char *url, const char *user_from_url, unsigned int allowed,
                   void *payload)
{
    (void)url; (void)user_from_url;
    pub *p = payload;
    if (!p->have_cred || !(allowed & GIT_CREDENTIAL_USERPASS_PLAINTEXT)) return GIT_PASSTHROUGH;
    if (p->cred_calls++ > 0) {
        char msg[PATH_MAX + 80];
        snprintf(msg, sizeof msg, "the server refused the credentials in %s", p->cred_path);
        git_error_set_str(GIT_ERROR_NET, msg);
        return GIT_EAUTH;
    }
    return git_credential_userpass_plaintext_new(out, p->user, p->token);
}

/* The remote's refusal of one ref (a hook, a protected branch): kept for the message. */
static int push_ref_cb(const char *refname, const char *status, void *payload)
{
    pub *p = payload;
    if (status && !p->rejected[0]) snprintf(p->rejected, sizeof p->rejected, "%s rejected: %s", refname, status);
    return 0;
}

/* The remote's "remote: ..." lines: the last non-empty one says why a hook refused. */
static int sideband_cb(const char *str, int len, void *payload)
{
    pub *p = payload;
    while (len > 0 && (str[len - 1] == '\n' || str[len - 1] == '\r' || str[len - 1] == ' ')) len--;
    int start = len;
    while (start > 0 && str[start - 1] != '\n' && str[start - 1] != '\r') start--;
    if (len > start) snprintf(p->remote_said, sizeof p->remote_said, "%.*s", len - start, str + start);
    return 0;
}

static void callbacks(pub *p, git_remote_callbacks *cb)
{
    cb->credentials = cred_cb;
    cb->push_update_reference = push_ref_cb;
    cb->sideband_progress = sideband_cb;
    cb->payload = p;
    p->cred_calls = 0;
}

/* ---- the working clone --------------------------------------------------------------- */

static int same_place(const char *a, const char *b)
{
    char ra[PATH_MAX], rb[PATH_MAX];
    if (!realpath(a, ra) || !realpath(b, rb)) return strcmp(a, b) == 0;
    return strcmp(ra, rb) == 0;
}

/* origin = g->repo in the clone's config, for a person looking into the clone. We
 * talk to the remote through an anonymous remote with explicit refspecs, made without
 * url.*.insteadOf: libgit2 1.5's git_remote_create, _lookup, _set_url and the
 * insteadOf lookup read or write the config by regular expression and leak the pcre2
 * match data on every call (LeakSanitizer found it); plain gets and sets do not. */
static int set_origin(pub *p)
{
    git_config *cfg = NULL;
    git_buf cur = {0};
    int rc = git_repository_config(&cfg, p->repo);
    if (rc == 0 && git_config_get_string_buf(&cur, cfg, "remote.origin.url") == 0 && strcmp(cur.ptr, p->g->repo) == 0)
        goto out;
    if (rc == 0) rc = git_config_set_string(cfg, "remote.origin.url", p->g->repo);
    if (rc == 0) rc = git_config_set_string(cfg, "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*");
out:
    git_buf_dispose(&cur);
    git_config_free(cfg);
    return rc;
}

/* Open workdir, or create it (parents too); origin names g->repo (updated when the
 * configuration changed it); HEAD names the branch. */
static int open_workdir(pub *p, const char *workdir, gx_err *err)
{
    int rc = git_repository_open_ext(&p->repo, workdir, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
    if (rc == GIT_ENOTFOUND) {
        git_repository_init_options io;
        git_repository_init_options_init(&io, GIT_REPOSITORY_INIT_OPTIONS_VERSION);
        io.flags = GIT_REPOSITORY_INIT_MKPATH;
        io.initial_head = p->branch;
        rc = git_repository_init_ext(&p->repo, workdir, &io);
        if (rc < 0) return git_fail(p, err, "", "create the working clone %s", workdir);
    } else if (rc < 0) {
        return git_fail(p, err, "", "open the working clone %s", workdir);
    }
    if (git_repository_is_bare(p->repo))
        return gx_errf(err, 500, "", "%s is a bare repository: the hub's working clone must have a working tree",
                       workdir);
    git_reference *head = NULL;
    rc = git_reference_lookup(&head, p->repo, "HEAD");
    int right = rc == 0 && git_reference_type(head) == GIT_REFERENCE_SYMBOLIC &&
                strcmp(git_reference_symbolic_target(head), p->local_ref) == 0;
    git_reference_free(head);
    if (!right) {
        if (git_repository_set_head(p->repo, p->local_ref) < 0)
            return git_fail(p, err, "git.branch", "point HEAD of %s at %s", workdir, p->local_ref);
        p->moved = 1;
    }
    if (same_place(p->g->repo, workdir)) return 0;
    git_remote_create_options ro;
    git_remote_create_options_init(&ro, GIT_REMOTE_CREATE_OPTIONS_VERSION);
    ro.repository = p->repo;
    ro.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF;
    if (set_origin(p) < 0 || git_remote_create_with_opts(&p->remote, p->g->repo, &ro) < 0)
        return git_fail(p, err, "git.repo", "set origin of %s to %s", workdir, p->url);
    return 0;
}

static int fetch(pub *p, gx_err *err)
{
    char spec[700];
    snprintf(spec, sizeof spec, "+%s:%s", p->local_ref, p->tracking_ref);
    char *specs[] = {spec};
    git_strarray arr = {specs, 1};
    git_fetch_options fo;
    git_fetch_options_init(&fo, GIT_FETCH_OPTIONS_VERSION);
    callbacks(p, &fo.callbacks);
    fo.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
    p->remote_said[0] = 0;
    if (git_remote_fetch(p->remote, &arr, &fo, "gpuaas: fetch") < 0)
        return git_fail(p, err, "git.repo", "fetch from %s", p->url);
    return 0;
}

/* 1: ref resolved into out; 0: it does not exist; -1: error. */
static int ref_oid(pub *p, const char *name, git_oid *out, gx_err *err)
{
    int rc = git_reference_name_to_id(out, p->repo, name);
    if (rc == GIT_ENOTFOUND) return 0;
    if (rc < 0) return git_fail(p, err, "", "read %s", name);
    return 1;
}

static int set_branch(pub *p, const git_oid *to, gx_err *err)
{
    git_reference *ref = NULL;
    if (git_reference_create(&ref, p->repo, p->local_ref, to, 1, "gpuaas: publish") < 0)
        return git_fail(p, err, "", "move %s", p->local_ref);
    git_reference_free(ref);
    p->moved = 1;
    return 0;
}

/* ---- trees --------------------------------------------------------------------------- */

typedef struct edit {
    const char *path;
    git_oid blob;
    int remove;
} edit;

/* The tree of commit c with the edits applied (c NULL: from nothing). A removal of a
 * path the tree lacks is no edit (git_tree_create_updated would fail on it). */
static int apply_edits(pub *p, const git_oid *c, const edit *ed, size_t n, git_oid *tree_out, gx_err *err)
{
    git_commit *commit = NULL;
    git_tree *base = NULL;
    git_tree_update *up = gx_xcalloc(n ? n : 1, sizeof *up);
    size_t k = 0;
    int rc = -1;
    if (c && (git_commit_lookup(&commit, p->repo, c) < 0 || git_commit_tree(&base, commit) < 0)) {
        git_fail(p, err, "", "read commit %s", git_oid_tostr_s(c));
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (ed[i].remove) {
            git_tree_entry *e = NULL;
            if (!base || git_tree_entry_bypath(&e, base, ed[i].path) != 0) continue;
            git_tree_entry_free(e);
            up[k].action = GIT_TREE_UPDATE_REMOVE;
        } else {
            up[k].action = GIT_TREE_UPDATE_UPSERT;
            up[k].id = ed[i].blob;
            up[k].filemode = GIT_FILEMODE_BLOB;
        }
        up[k++].path = ed[i].path;
    }
    if (k == 0 && base) {
        git_oid_cpy(tree_out, git_tree_id(base));
        rc = 0;
    } else if (git_tree_create_updated(tree_out, p->repo, base, k, up) < 0) {
        git_fail(p, err, "changes", "build the tree of the commit");
    } else {
        rc = 0;
    }
out:
    free(up);
    git_tree_free(base);
    git_commit_free(commit);
    return rc;
}

static int make_commit(pub *p, const git_signature *author, const git_signature *committer, const char *message,
                       const git_oid *tree_id, const git_oid *parent, git_oid *out, gx_err *err)
{
    git_tree *tree = NULL;
    git_commit *par = NULL;
    int rc = -1;
    if (git_tree_lookup(&tree, p->repo, tree_id) < 0) { git_fail(p, err, "", "read a tree"); goto out; }
    if (parent && git_commit_lookup(&par, p->repo, parent) < 0) { git_fail(p, err, "", "read the parent"); goto out; }
    const git_commit *parents[1] = {par};
    if (git_commit_create(out, p->repo, NULL, author, committer, NULL, message, tree, par ? 1 : 0, parents) < 0)
        git_fail(p, err, "", "commit");
    else
        rc = 0;
out:
    git_commit_free(par);
    git_tree_free(tree);
    return rc;
}

/* Replay the commits of (onto..tip] onto onto, each as the paths it changed, with its
 * author, committer and message; one that changes nothing there is dropped. */
static int replay(pub *p, const git_oid *onto, const git_oid *tip, git_oid *out, gx_err *err)
{
    git_revwalk *w = NULL;
    git_oid cur = *onto, c;
    int rc = -1;
    if (git_revwalk_new(&w, p->repo) < 0 || git_revwalk_sorting(w, GIT_SORT_TOPOLOGICAL | GIT_SORT_REVERSE) < 0 ||
        git_revwalk_push(w, tip) < 0 || git_revwalk_hide(w, onto) < 0) {
        git_fail(p, err, "", "list the unpushed commits");
        goto out;
    }
    while ((rc = git_revwalk_next(&c, w)) == 0) {
        git_commit *cm = NULL, *parent = NULL;
        git_tree *t = NULL, *pt = NULL;
        git_diff *d = NULL;
        rc = -1;
        if (git_commit_lookup(&cm, p->repo, &c) < 0 || git_commit_tree(&t, cm) < 0 ||
            (git_commit_parentcount(cm) > 0 && (git_commit_parent(&parent, cm, 0) < 0 || git_commit_tree(&pt, parent) < 0)) ||
            git_diff_tree_to_tree(&d, p->repo, pt, t, NULL) < 0) {
            git_fail(p, err, "", "read unpushed commit %s", git_oid_tostr_s(&c));
        } else {
            size_t nd = git_diff_num_deltas(d);
            edit *ed = gx_xcalloc(nd ? nd : 1, sizeof *ed);
            for (size_t i = 0; i < nd; i++) {
                const git_diff_delta *dl = git_diff_get_delta(d, i);
                ed[i].remove = dl->status == GIT_DELTA_DELETED;
                ed[i].path = ed[i].remove ? dl->old_file.path : dl->new_file.path;
                ed[i].blob = dl->new_file.id;
            }
            git_oid tree_id, base_tree;
            git_commit *curc = NULL;
            if (apply_edits(p, &cur, ed, nd, &tree_id, err) == 0 && git_commit_lookup(&curc, p->repo, &cur) == 0) {
                base_tree = *git_commit_tree_id(curc);
                if (git_oid_equal(&tree_id, &base_tree))
                    rc = 0;
                else
                    rc = make_commit(p, git_commit_author(cm), git_commit_committer(cm), git_commit_message(cm),
                                     &tree_id, &cur, &cur, err);
            }
            git_commit_free(curc);
            free(ed);
        }
        git_diff_free(d);
        git_tree_free(pt);
        git_tree_free(t);
        git_commit_free(parent);
        git_commit_free(cm);
        if (rc < 0) goto out;
    }
    if (rc != GIT_ITEROVER) { git_fail(p, err, "", "list the unpushed commits"); rc = -1; goto out; }
    *out = cur;
    rc = 0;
out:
    git_revwalk_free(w);
    return rc;
}

/* After a fetch: the local branch becomes the remote's, or stays ahead of it, or has
 * its unpushed commits replayed onto it. */
static int catch_up(pub *p, gx_err *err)
{
    git_oid l, r, base, nl;
    int hl = ref_oid(p, p->local_ref, &l, err), hr = ref_oid(p, p->tracking_ref, &r, err);
    if (hl < 0 || hr < 0) return -1;
    if (!hr || (hl && git_oid_equal(&l, &r))) return 0;
    if (!hl) return set_branch(p, &r, err);
    int rc = git_merge_base(&base, p->repo, &l, &r);
    if (rc < 0 && rc != GIT_ENOTFOUND) return git_fail(p, err, "", "compare %s with the remote's", p->local_ref);
    if (rc == 0 && git_oid_equal(&base, &l)) return set_branch(p, &r, err);   /* fast-forward */
    if (rc == 0 && git_oid_equal(&base, &r)) return 0;                         /* ahead: push */
    if (replay(p, &r, &l, &nl, err) < 0) return -1;
    return set_branch(p, &nl, err);
}

/* ---- the call --------------------------------------------------------------------------- */

/* A change's path: relative, no empty, "." or ".." component, nothing inside .git. */
static int check_path(const char *path, size_t i, gx_err *err)
{
    char field[64];
    snprintf(field, sizeof field, "changes[%zu].path", i);
    if (!path || !*path) return gx_errf(err, 400, field, "is empty");
    if (path[0] == '/') return gx_errf(err, 400, field, "%s: must be relative to the repository's root", path);
    for (const char *s = path; *s;) {
        size_t len = strcspn(s, "/");
        if (len == 0 || (len == 1 && s[0] == '.') || (len == 2 && !strncmp(s, "..", 2)) ||
            (len == 4 && !strncasecmp(s, ".git", 4)))
            return gx_errf(err, 400, field, "%s: has an empty, \".\", \"..\" or \".git\" component", path);
        s += len;
        if (*s == '/' && !*++s) return gx_errf(err, 400, field, "%s: ends with /", path);
    }
    return 0;
}

/* The edits of this call: blobs written, the last change to a path winning. */
static int build_edits(pub *p, const gx_git_change *ch, size_t n, edit *ed, size_t *ned, gx_err *err)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int later = 0;
        for (size_t j = i + 1; j < n && !later; j++) later = strcmp(ch[i].path, ch[j].path) == 0;
        if (later) continue;
        ed[k].path = ch[i].path;
        ed[k].remove = ch[i].content == NULL;
        if (ch[i].content &&
            git_blob_create_from_buffer(&ed[k].blob, p->repo, ch[i].content, strlen(ch[i].content)) < 0) {
            char field[64];
            snprintf(field, sizeof field, "changes[%zu].content", i);
            return git_fail(p, err, field, "store %s", ch[i].path);
        }
        k++;
    }
    *ned = k;
    return 0;
}

/* This call's commit on the local branch, unless it changes nothing (a branch that
 * does not exist yet is created even then: its first commit). */
static int commit_changes(pub *p, const gx_git_change *ch, size_t n, const char *an, const char *ae,
                          const char *message, gx_err *err)
{
    edit *ed = gx_xcalloc(n ? n : 1, sizeof *ed);
    git_signature *author = NULL, *committer = NULL;
    git_commit *head = NULL;
    git_oid l, tree, c;
    size_t ned = 0;
    int rc = -1, hl = ref_oid(p, p->local_ref, &l, err);
    if (hl < 0 || build_edits(p, ch, n, ed, &ned, err) < 0) goto out;
    if (apply_edits(p, hl ? &l : NULL, ed, ned, &tree, err) < 0) goto out;
    if (hl) {
        if (git_commit_lookup(&head, p->repo, &l) < 0) { git_fail(p, err, "", "read %s", p->local_ref); goto out; }
        if (git_oid_equal(&tree, git_commit_tree_id(head))) { rc = 0; goto out; }
    }
    if (git_signature_now(&author, an, ae) < 0) { git_fail(p, err, "author", "author %s <%s>", an, ae); goto out; }
    const char *cn = p->g->author_name && *p->g->author_name ? p->g->author_name : "gpuaas";
    const char *ce = p->g->author_email && *p->g->author_email ? p->g->author_email : "gpuaas@localhost";
    if (git_signature_now(&committer, cn, ce) < 0) {
        git_fail(p, err, "git.authorName", "committer %s <%s>", cn, ce);
        goto out;
    }
    if (make_commit(p, author, committer, message, &tree, hl ? &l : NULL, &c, err) < 0) goto out;
    rc = set_branch(p, &c, err);
out:
    git_commit_free(head);
    git_signature_free(committer);
    git_signature_free(author);
    free(ed);
    return rc;
}

/* One push of the local branch. *retry: the remote refused it in a way a fetch and a
 * replay can answer (someone else pushed; a hook may say yes next time). */
static int push_once(pub *p, int *retry, gx_err *err)
{
    char spec[700];
    snprintf(spec, sizeof spec, "%s:%s", p->local_ref, p->local_ref);
    char *specs[] = {spec};
    git_strarray arr = {specs, 1};
    git_push_options po;
    git_push_options_init(&po, GIT_PUSH_OPTIONS_VERSION);
    callbacks(p, &po.callbacks);
    p->rejected[0] = p->remote_said[0] = 0;
    int rc = git_remote_push(p->remote, &arr, &po);
    *retry = rc == GIT_ENONFASTFORWARD || (rc == 0 && p->rejected[0]);
    if (rc < 0) return git_fail(p, err, "git.repo", "push to %s", p->url);
    if (p->rejected[0]) {
        char said[300] = "";
        if (p->remote_said[0]) snprintf(said, sizeof said, " (remote said: %s)", p->remote_said);
        p->remote_said[0] = 0;
        char msg[700];
        snprintf(msg, sizeof msg, "%s%s", p->rejected, said);
        git_error_set_str(GIT_ERROR_NET, msg);
        return git_fail(p, err, "git.repo", "push to %s", p->url);
    }
    return 0;
}

/* Push until the remote has the local branch: a refused push is fetched, replayed and
 * pushed again, PUSH_TRIES pushes in all. */
static int push(pub *p, gx_err *err)
{
    for (int tries = 1;; tries++) {
        git_oid l, r;
        int hl = ref_oid(p, p->local_ref, &l, err), hr = ref_oid(p, p->tracking_ref, &r, err);
        if (hl < 0 || hr < 0) return -1;
        if (!hl || (hr && git_oid_equal(&l, &r))) return 0;
        int retry = 0;
        if (push_once(p, &retry, err) == 0) return 0;
        if (!retry) return -1;
        if (tries == PUSH_TRIES) {
            gx_err_wrap(err, "gave up after %d pushes", PUSH_TRIES);
            return -1;
        }
        if (fetch(p, err) < 0 || catch_up(p, err) < 0) return -1;
    }
}

/* The working tree and index follow the branch (the hub owns the clone: a forced
 * checkout, which also removes files, and folders, the branch no longer has). */
static int check_out(pub *p, gx_err *err)
{
    git_oid l;
    if (ref_oid(p, p->local_ref, &l, NULL) != 1) return 0;
    git_checkout_options co;
    git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);
    co.checkout_strategy = GIT_CHECKOUT_FORCE;
    if (git_checkout_head(p->repo, &co) < 0)
        return git_fail(p, err, "", "check out %s in %s", p->local_ref, git_repository_workdir(p->repo));
    return 0;
}

int gx_git_commit_push(const gx_fleet_git *g, const char *workdir, const gx_git_change *changes, size_t n,
                       const char *author_name, const char *author_email, const char *message, char commit_out[41],
                       gx_err *err)
{
    if (!g || !g->repo || !*g->repo) return gx_errf(err, 400, "git.repo", "is required");
    if (!workdir || !*workdir) return gx_errf(err, 400, "workdir", "is required");
    if (!author_name || !*author_name) return gx_errf(err, 400, "author", "the author's name is required");
    if (!author_email || !*author_email) return gx_errf(err, 400, "author", "the author's email is required");
    if (!message || !*message) return gx_errf(err, 400, "message", "is required");
    for (size_t i = 0; i < n; i++)
        if (check_path(changes[i].path, i, err) < 0) return -1;
    pthread_once(&init_once, init_libgit2);

    pub p = {.g = g, .branch = g->branch && *g->branch ? g->branch : "main"};
    int valid = 0;
    if (snprintf(p.local_ref, sizeof p.local_ref, "refs/heads/%s", p.branch) >= (int)sizeof p.local_ref ||
        git_reference_name_is_valid(&valid, p.local_ref) < 0 || !valid)
        return gx_errf(err, 400, "git.branch", "%s: not a valid branch name", p.branch);
    snprintf(p.tracking_ref, sizeof p.tracking_ref, "refs/remotes/origin/%s", p.branch);
    strip_userinfo(p.url, sizeof p.url, g->repo);
    if (is_ssh(g->repo))
        return gx_errf(err, 400, "git.repo", "%s: ssh remotes are not supported: use https or a local path", p.url);
    if (g->credentials_file) {
        if (strncmp(g->repo, "https://", 8) != 0)
            return gx_errf(err, 400, "git.credentialsFile", "credentials are sent only to an https:// remote, not %s",
                           p.url);
        if (read_credentials(&p, err) < 0) return -1;
    }

    int rc = -1;
    if (open_workdir(&p, workdir, err) < 0) goto out;
    if (p.remote && (fetch(&p, err) < 0 || catch_up(&p, err) < 0)) goto out;
    if (commit_changes(&p, changes, n, author_name, author_email, message, err) < 0) goto out;
    if (p.remote && push(&p, err) < 0) goto out;
    rc = 0;
out:
    if (p.repo && p.moved) {
        gx_err spare;
        if (check_out(&p, rc == 0 ? err : &spare) < 0) rc = -1;
    }
    if (rc == 0) {
        git_oid l;
        if (ref_oid(&p, p.local_ref, &l, err) == 1)
            git_oid_tostr(commit_out, 41, &l);
        else
            rc = gx_errf(err, 500, "", "%s has no commit", p.local_ref);
    }
    git_remote_free(p.remote);
    git_repository_free(p.repo);
    explicit_bzero(p.token, sizeof p.token);
    explicit_bzero(p.user, sizeof p.user);
    return rc;
}
