/* The scanner's hot path in one pass: a chunk of glog/klog lines, each decided once.
 *
 * `scan(chunk, valid_days)` reads a chunk as bisector/logs/scanner.py hands it over
 * (b"\n" then whole lines, the last may lack its newline) and gives, for a chunk whose
 * every line is a glog record with a time that exists or a plain continuation line, what
 * the numpy path (records.classify, nodewrites.messages / node_writes / cacher_lines)
 * computes from it, and each decided write's line, time and kind (what
 * scanner._node_writes reads with the regex where times are asked; collecting them costs
 * ~2% of the pass, so they are always collected). Any other chunk (a
 * garbled line, a CRI or JSON record, binary bytes in a continuation line, no glog record
 * at all) gives None and the numpy path decides all of it: this file never has to agree
 * with it on the rare shapes.
 *
 * The rules are those of the numpy code, byte for byte; bytes past the chunk's end read
 * as zeros, as numpy's windows read them. Lines these windows cannot decide (another pid
 * field, a query string, a long name, a status of other than three digits) are returned
 * for the regex, as nodewrites.py does. tests/logs/test_glogscan.py compares the two on
 * generated and mutated chunks.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define GLOG_WIDTH 22 /* `I0602 05:51:10.000001 `: shorter lines are no record */
#define HEAD_SPAN 48  /* from the space after the time field through `] ` */
#define URI_SPAN 64
#define TAIL_SPAN 48

typedef struct {
    const unsigned char *a;
    Py_ssize_t size;
} Chunk;

/* Byte i of the chunk, zero past its end (numpy's rows_at / word_at). */
static inline unsigned char at(const Chunk *c, Py_ssize_t i) { return i < c->size ? c->a[i] : 0; }

static inline int is_digit(unsigned char b) { return b >= '0' && b <= '9'; }

/* `\s` of a bytes regex: space, \t \n \v \f \r. */
static inline int is_space(unsigned char b) { return b == ' ' || (b >= 9 && b <= 13); }

/* The literal `text` (n bytes, n short) at offset i; never past the chunk's end, where
 * numpy reads zeros and no literal holds one. A loop, not memcmp: a libc call per field
 * of every line cost more than the comparisons. */
static inline int has(const Chunk *c, Py_ssize_t i, const char *text, Py_ssize_t n) {
    if (i + n > c->size) return 0;
    for (Py_ssize_t k = 0; k < n; k++)
        if (c->a[i + k] != (unsigned char)text[k]) return 0;
    return 1;
}

/* `I0602 05:51:10.000001 `: a level, digits and separators (records._GLOG_WORDS). */
static int glog_shaped(const unsigned char *h) {
    static const unsigned char digits[] = {1, 2, 3, 4, 6, 7, 9, 10, 12, 13, 15, 16, 17, 18, 19, 20};
    if (!(h[0] == 'I' || h[0] == 'W' || h[0] == 'E' || h[0] == 'F')) return 0;
    if (h[5] != ' ' || h[8] != ':' || h[11] != ':' || h[14] != '.' || h[21] != ' ') return 0;
    for (size_t k = 0; k < sizeof digits; k++)
        if (!is_digit(h[digits[k]])) return 0;
    return 1;
}

/* hh < 24, mm < 60, ss < 60 and a month-day that exists in the reference's year. The
 * table is records._valid_days, keyed MMDD d1 d2 d3 d4 -> d1 | d3 << 4 | d2 << 8 | d4 << 12. */
static int glog_valid(const unsigned char *h, const unsigned char *valid_days) {
    if (!(h[6] < '2' || (h[6] == '2' && h[7] < '4'))) return 0;
    if (h[9] >= '6' || h[12] >= '6') return 0;
    unsigned key = (h[1] & 15u) | (h[3] & 15u) << 4 | (h[2] & 15u) << 8 | (h[4] & 15u) << 12;
    return valid_days[key] != 0;
}

/* `2017-06-02T05:51:10` (records.classify's CRI shape) or `{"ts":` (JSON). */
static int other_record_shaped(const unsigned char *h) {
    static const unsigned char digits[] = {0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18};
    int cri = h[4] == '-' && h[7] == '-' && h[10] == 'T' && h[13] == ':' && h[16] == ':';
    for (size_t k = 0; cri && k < sizeof digits; k++)
        cri = is_digit(h[digits[k]]);
    return cri || memcmp(h, "{\"ts\":", 6) == 0;
}

/* A continuation line is text: no control byte (records._BINARY), valid UTF-8.
 * -1 when the check itself failed (memory). */
static int plain_text(const unsigned char *s, Py_ssize_t n) {
    int ascii = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char b = s[i];
        if (b < 0x20 ? (b <= 8 || b == 11 || b == 12 || b >= 14) : b == 0x7f) return 0;
        ascii &= b < 0x80;
    }
    if (ascii) return 1;
    PyObject *text = PyUnicode_DecodeUTF8((const char *)s, n, "strict");
    if (text != NULL) {
        Py_DECREF(text);
        return 1;
    }
    if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) return -1;
    PyErr_Clear();
    return 0;
}

/* glog's seven-column pid then a space at line + 22 (nodewrites._padded_pid): spaces,
 * then at least one digit up to column 28, a space at 29. */
static int padded_pid(const Chunk *c, Py_ssize_t line) {
    Py_ssize_t k = line + 22;
    if (k + 8 > c->size || c->a[k + 7] != ' ') return 0;
    int j = 0;
    while (j < 7 && c->a[k + j] == ' ') j++;
    if (j == 7) return 0;
    for (; j < 7; j++)
        if (!is_digit(c->a[k + j])) return 0;
    return 1;
}

enum Write { NO_WRITE, WRITE, UNDECIDED };

typedef struct {
    long long writes, conflicts, successes;
} Counts;

/* Each decided write's line start, time of day, month-day and kind, in line order (bytes
 * of int64 / double / uint16 / uint8 for numpy). */
typedef struct {
    Py_ssize_t n, cap;
    long long *start;
    double *seconds;
    unsigned short *month_day;
    unsigned char *kind; /* CONFLICT | SUCCESS */
} Dated;

enum Kind { CONFLICT = 1, SUCCESS = 2 };

static void dated_free(Dated *d) {
    PyMem_Free(d->start);
    PyMem_Free(d->seconds);
    PyMem_Free(d->month_day);
    PyMem_Free(d->kind);
}

static inline int digit_at(const unsigned char *h, int k) { return h[k] - '0'; }

/* The write of the glog record at `line` (its time checked: glog_valid). The time of day
 * is computed as timestamps.glog_seconds computes it, the same double operations in the
 * same order, so the times are bit-identical: (h*3600 + m*60 + s) as a double, plus the
 * microseconds divided by 1e6. */
static int dated_add(Dated *d, const Chunk *c, Py_ssize_t line, unsigned char kind) {
    if (d->n == d->cap) {
        Py_ssize_t cap = d->cap ? 2 * d->cap : 1024;
        long long *start = PyMem_Realloc(d->start, (size_t)cap * sizeof *start);
        if (start != NULL) d->start = start;
        double *seconds = PyMem_Realloc(d->seconds, (size_t)cap * sizeof *seconds);
        if (seconds != NULL) d->seconds = seconds;
        unsigned short *days = PyMem_Realloc(d->month_day, (size_t)cap * sizeof *days);
        if (days != NULL) d->month_day = days;
        unsigned char *k = PyMem_Realloc(d->kind, (size_t)cap);
        if (k != NULL) d->kind = k;
        if (start == NULL || seconds == NULL || days == NULL || k == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        d->cap = cap;
    }
    /* `I0602 05:51:10.000001`: MMDD at 1-4, hh at 6-7, mm at 9-10, ss at 12-13, the
     * microseconds at 15-20. */
    const unsigned char *h = c->a + line;
    long long hours = digit_at(h, 6) * 10 + digit_at(h, 7);
    long long minutes = digit_at(h, 9) * 10 + digit_at(h, 10);
    long long secs = digit_at(h, 12) * 10 + digit_at(h, 13);
    long long micros = 0;
    for (int k = 15; k <= 20; k++) micros = micros * 10 + digit_at(h, k);
    int month_day = 0;
    for (int k = 1; k <= 4; k++) month_day = month_day * 10 + digit_at(h, k);
    d->start[d->n] = line;
    d->seconds[d->n] = (double)(hours * 3600 + minutes * 60 + secs) + (double)micros / 1e6;
    d->month_day[d->n] = (unsigned short)month_day;
    d->kind[d->n] = kind;
    d->n++;
    return 0;
}

/* The node write at message start `cur` (nodewrites.node_writes, one line). */
static enum Write node_write(const Chunk *c, Py_ssize_t line, Py_ssize_t cur, Counts *n,
                            unsigned char *kind) {
    int verb; /* index into nodewrites.VERBS */
    if (has(c, cur, "PATCH ", 6)) verb = 0, cur += 6;
    else if (has(c, cur, "POST ", 5)) verb = 1, cur += 5;
    else if (has(c, cur, "PUT ", 4)) verb = 2, cur += 4;
    else if (has(c, cur, "APPLY ", 6)) verb = 3, cur += 6;
    else return NO_WRITE;
    if (!padded_pid(c, line)) return UNDECIDED;

    if (!has(c, cur, "/api/v1/nodes", 13)) return NO_WRITE;
    unsigned char after = at(c, cur + 13);
    if (after == '/') {
        int end = -1;
        for (int k = 14; k < URI_SPAN && end < 0; k++) {
            unsigned char b = at(c, cur + k);
            if (b == '/' || b == '?' || b == ':' || is_space(b)) end = k;
        }
        if (end < 0) return UNDECIDED; /* a name longer than the window */
        if (end == 14) return NO_WRITE; /* empty name */
        cur += end;
    } else if (after == ':' || after == '?') {
        cur += 13;
    } else {
        return NO_WRITE;
    }

    if (at(c, cur) == '?' || has(c, cur, "/status?", 8)) return UNDECIDED;
    if (!(has(c, cur, "/status: (", 10) || has(c, cur, ": (", 3))) return NO_WRITE;
    int close = -1;
    for (int k = 0; k < TAIL_SPAN && close < 0; k++) {
        unsigned char b = at(c, cur + k);
        if (b == ')' || b == '\n') close = k;
    }
    if (close < 0) return UNDECIDED; /* a latency longer than the window */
    Py_ssize_t st = cur + close;
    if (at(c, st) != ')') return NO_WRITE;
    int three = at(c, st + 1) == ' ' && is_digit(at(c, st + 2)) && is_digit(at(c, st + 3)) &&
                is_digit(at(c, st + 4)) && is_space(at(c, st + 5));
    if (!three) return at(c, st + 1) == ' ' && is_digit(at(c, st + 2)) ? UNDECIDED : NO_WRITE;
    int success = at(c, st + 2) == '2';
    int conflict = (verb == 0 || verb == 3) && at(c, st + 2) == '4' && at(c, st + 3) == '0' &&
                   at(c, st + 4) == '9';
    n->writes++;
    n->successes += success;
    n->conflicts += conflict;
    *kind = (unsigned char)((conflict ? CONFLICT : 0) | (success ? SUCCESS : 0));
    return WRITE;
}

/* A message the cacher handlers count starts with one of these (nodewrites._CACHER_LEADS). */
static int cacher_lead(const Chunk *c, Py_ssize_t cur) {
    return has(c, cur, "cacher (", 8) || has(c, cur, "Forcing ", 8) ||
           has(c, cur, "dispatch", 8) || has(c, cur, "AAA: ", 5) || has(c, cur, "bisector", 8);
}

static int append(PyObject *list, Py_ssize_t value) {
    PyObject *item = PyLong_FromSsize_t(value);
    if (item == NULL) return -1;
    int failed = PyList_Append(list, item);
    Py_DECREF(item);
    return failed;
}

/* One glog record starting at `line`: its message, cacher lead and node write. */
static int record(const Chunk *c, Py_ssize_t line, Py_ssize_t end, Counts *n, Dated *dated,
                  PyObject *undecided, PyObject *odd, PyObject *cacher) {
    /* The header ends at the first `]` or newline within HEAD_SPAN bytes of the space
     * after the time; the line's newline is at `end`, so only a `]` before it can. */
    Py_ssize_t space = line + 21, limit = space + HEAD_SPAN < end ? space + HEAD_SPAN : end;
    const unsigned char *stop = memchr(c->a + space, ']', (size_t)(limit - space));
    if (stop == NULL || stop + 1 >= c->a + c->size || stop[1] != ' ') return append(odd, line);
    Py_ssize_t msg = stop + 2 - c->a;
    switch (at(c, msg)) {
    case 'c': case 'F': case 'd': case 'A': case 'b':
        if (cacher_lead(c, msg) && append(cacher, line) < 0) return -1;
        break;
    }
    switch (at(c, msg)) {
    case 'P': case 'A': {
        unsigned char kind = 0;
        switch (node_write(c, line, msg, n, &kind)) {
        case UNDECIDED:
            return append(undecided, line);
        case WRITE:
            return dated_add(dated, c, line, kind);
        case NO_WRITE:
            break;
        }
        break;
    }
    }
    return 0;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer chunk, days;
    Dated dated = {0, 0, NULL, NULL, NULL, NULL};
    if (!PyArg_ParseTuple(args, "y*y*:scan", &chunk, &days)) return NULL;
    PyObject *result = NULL, *undecided = PyList_New(0), *odd = PyList_New(0),
             *cacher = PyList_New(0);
    if (undecided == NULL || odd == NULL || cacher == NULL) goto done;
    if (days.len != 1 << 16) {
        PyErr_SetString(PyExc_ValueError, "valid_days must hold 65536 bytes");
        goto done;
    }
    Chunk c = {(const unsigned char *)chunk.buf, chunk.len};
    const unsigned char *valid_days = (const unsigned char *)days.buf;
    Counts n = {0, 0, 0};
    Py_ssize_t count = 0, first = -1, last = -1;
    if (c.size <= 1 || c.a[0] != '\n') goto general;
    for (Py_ssize_t s = 1; s < c.size;) {
        const unsigned char *nl = memchr(c.a + s, '\n', (size_t)(c.size - s));
        Py_ssize_t e = nl ? nl - c.a : c.size;
        const unsigned char *h = c.a + s;
        count++;
        if (e - s >= GLOG_WIDTH && glog_shaped(h)) {
            if (!glog_valid(h, valid_days)) goto general; /* garbled: blanked by the numpy path */
            if (first < 0) first = s;
            last = s;
            if (record(&c, s, e, &n, &dated, undecided, odd, cacher) < 0) goto done;
        } else if (e - s >= GLOG_WIDTH && other_record_shaped(h)) {
            goto general;
        } else {
            int text = plain_text(h, e - s);
            if (text < 0) goto done;
            if (!text) goto general; /* binary: garbled */
        }
        s = e + 1;
    }
    if (first < 0) goto general;
    /* "y#" of a NULL pointer is None: no write at all is four empty byte strings. */
    Py_ssize_t k = dated.n;
    const char *none = "";
    result = Py_BuildValue(
        "(nnnLLLOOO(y#y#y#y#))", count, first, last, n.writes, n.conflicts, n.successes,
        undecided, odd, cacher, k ? (const char *)dated.start : none,
        k * (Py_ssize_t)sizeof *dated.start, k ? (const char *)dated.seconds : none,
        k * (Py_ssize_t)sizeof *dated.seconds, k ? (const char *)dated.month_day : none,
        k * (Py_ssize_t)sizeof *dated.month_day, k ? (const char *)dated.kind : none, k);
    goto done;
general:
    result = Py_NewRef(Py_None);
done:
    dated_free(&dated);
    Py_XDECREF(undecided);
    Py_XDECREF(odd);
    Py_XDECREF(cacher);
    PyBuffer_Release(&chunk);
    PyBuffer_Release(&days);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(chunk, valid_days) -> (lines, first_record, last_record, node_writes, conflicts, "
     "successes, undecided, odd, cacher, each write) or None: see bisector/logs/glogscan.py"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_glogscan", .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__glogscan(void) { return PyModule_Create(&module); }
