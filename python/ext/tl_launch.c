// The hot case of a launch plan (python/tl/fastlaunch.py) in C: checks, argument fields and the
// tl_stream_launch call for plans of torch CUDA tensors, scalars and constexprs.
// SPDX-License-Identifier: Apache-2.0
//
// launch(state, grid, args, kwargs, device, target) returns True after a launch, or None when
// anything is not the hot case (a mismatch, a new shape or address, an uncached import or
// stream, an error converting a value): the Python plan then takes the call and is the
// reference for every result and error. A failed tl_stream_launch is raised by the plan's
// _raise_status. Python's Limited API (abi3): built against 3.11's headers, loads on 3.11+.
#define Py_LIMITED_API 0x030B0000
#include <Python.h>

#include <stdint.h>

#include "tl/hal.h"

// The fields of `state` (fastlaunch.Plan._c_state builds it in this order).
enum {
  S_SLOTS,
  S_NARGS,
  S_KWNAMES,
  S_DEVICE,
  S_TARGET,
  S_LAST,
  S_ADDRS,
  S_IMPORTS,
  S_STREAMS,
  S_RAW_STREAM,
  S_TORCH_INDEX,
  S_ARGS,
  S_DESC,
  S_EXE,
  S_LAUNCH,
  S_PLAN,
  S_DEV,
  S_COUNT
};
enum { K_CONST = 0, K_SCALAR = 1, K_TORCH = 2 }; // fastlaunch._CONST, _SCALAR, _TORCH
#define MAX_TENSORS 64

typedef tl_status (*launch_fn)(tl_stream, tl_executable, const tl_launch_desc *);

static PyObject *s_dtype, *s_shape, *s_get_device, *s_stride, *s_data_ptr, *s_busy, *s_move_to_end,
    *s_grid, *s_copied_bytes, *s_raise_status, *zero;

static void *address(PyObject *state, int field) {
  return PyLong_AsVoidPtr(PyTuple_GetItem(state, field));
}

// Calls obj.name() and returns a new reference (NULL on error).
static PyObject *call0(PyObject *obj, PyObject *name) {
  return PyObject_CallMethodObjArgs(obj, name, NULL);
}

// 1: equal, 0: not (or an error, cleared: the Python plan meets it again).
static int equal(PyObject *a, PyObject *b) {
  int r = PyObject_RichCompareBool(a, b, Py_EQ);
  if (r < 0)
    PyErr_Clear();
  return r > 0;
}

// Checks torch tensor `v` of slot (kind, src, type, dtype, (rank, gpu), li) against the fields
// the plan last wrote for it, writes its buffer, and returns its import key (new reference) for
// move_to_end, or NULL when the Python plan must take the call.
static PyObject *torch_arg(PyObject *state, PyObject *slot, PyObject *v, tl_arg *c) {
  PyObject *key = NULL, *dtype = PyObject_GetAttr(v, s_dtype);
  PyObject *shape = PyObject_GetAttr(v, s_shape), *gpu = call0(v, s_get_device);
  PyObject *strides = call0(v, s_stride), *ptr = call0(v, s_data_ptr);
  PyObject *want = PyTuple_GetItem(slot, 4);
  PyObject *prev =
      PyList_GetItem(PyTuple_GetItem(state, S_LAST), PyLong_AsSsize_t(PyTuple_GetItem(slot, 5)));
  if (!dtype || !shape || !gpu || !strides || !ptr || !prev)
    goto out;
  if (dtype != PyTuple_GetItem(slot, 3) ||
      PyObject_Size(shape) != PyLong_AsSsize_t(PyTuple_GetItem(want, 0)) ||
      !equal(gpu, PyTuple_GetItem(want, 1)))
    goto out;
  // The fields in c_args are those of the last launch: only the same shape and strides reuse them.
  if (prev == Py_None || !equal(shape, PyTuple_GetItem(prev, 1)) ||
      !equal(strides, PyTuple_GetItem(prev, 2)))
    goto out;
  PyObject *span = PyTuple_GetItem(prev, 0), *one = NULL; // key: (address, max(span, 1))
  if (!PyObject_IsTrue(span))
    span = one = PyLong_FromLong(1);
  key = span ? PyTuple_Pack(2, ptr, span) : NULL;
  Py_XDECREF(one);
  if (!key)
    goto out;
  // The buffer imported for this key, still the device's (not evicted from Device.imports).
  PyObject *entry = PyDict_GetItemWithError(PyTuple_GetItem(state, S_ADDRS), key);
  PyObject *live = entry ? PyDict_GetItemWithError(PyTuple_GetItem(state, S_IMPORTS), key) : NULL;
  if (!entry || !live || live != PyTuple_GetItem(entry, 0)) {
    Py_CLEAR(key);
    goto out;
  }
  c->buffer = (tl_buffer)PyLong_AsVoidPtr(PyTuple_GetItem(entry, 1));
out:
  Py_XDECREF(dtype);
  Py_XDECREF(shape);
  Py_XDECREF(gpu);
  Py_XDECREF(strides);
  Py_XDECREF(ptr);
  if (!key)
    PyErr_Clear();
  return key;
}

// Writes scalar `v` of slot (kind, src, type, i32 class or None, is_float, li) after the plan's
// check of its integer class; 0: not the hot case.
static int scalar_arg(PyObject *slot, PyObject *v, tl_arg *c) {
  PyObject *cls = PyTuple_GetItem(slot, 3);
  int is_float = PyObject_IsTrue(PyTuple_GetItem(slot, 4)) == 1;
  if (cls != Py_None || !is_float) {
    PyObject *n = PyNumber_Long(v); // int(v), as the plan does
    if (!n)
      return PyErr_Clear(), 0;
    int overflow = 0;
    long long i = PyLong_AsLongLongAndOverflow(n, &overflow);
    Py_DECREF(n);
    if (i == -1 && PyErr_Occurred())
      return PyErr_Clear(), 0;
    int i32 = !overflow && i >= -2147483648LL && i < 2147483648LL;
    if (cls != Py_None && (cls == Py_True) != i32)
      return 0;
    if (!is_float) {
      if (overflow) // the plan raises cffi's error
        return 0;
      c->i = i;
      return 1;
    }
  }
  double f = PyFloat_AsDouble(v); // float(v)
  if (f == -1.0 && PyErr_Occurred())
    return PyErr_Clear(), 0;
  c->f = f;
  return 1;
}

// The checks and writes of every slot; 1 when all are the hot case. keys[]: new references.
static int fill(PyObject *state, PyObject *const *vals, Py_ssize_t nargs, PyObject *kwargs,
                PyObject **keys, int *nkeys) {
  PyObject *slots = PyTuple_GetItem(state, S_SLOTS), *kwnames = PyTuple_GetItem(state, S_KWNAMES);
  tl_arg *c_args = address(state, S_ARGS);
  for (Py_ssize_t s = 0; s < PyTuple_Size(slots); ++s) {
    PyObject *slot = PyTuple_GetItem(slots, s);
    long kind = PyLong_AsLong(PyTuple_GetItem(slot, 0));
    Py_ssize_t src = PyLong_AsSsize_t(PyTuple_GetItem(slot, 1));
    PyObject *v = src < nargs
                      ? vals[src]
                      : PyDict_GetItemWithError(kwargs, PyTuple_GetItem(kwnames, src - nargs));
    if (!v || (PyObject *)Py_TYPE(v) != PyTuple_GetItem(slot, 2))
      return PyErr_Clear(), 0;
    if (kind == K_CONST) {
      int r = PyObject_RichCompareBool(v, PyTuple_GetItem(slot, 3), Py_NE);
      if (r != 0)
        return PyErr_Clear(), 0;
      continue;
    }
    tl_arg *c = &c_args[PyLong_AsSsize_t(PyTuple_GetItem(slot, 5))];
    if (kind == K_SCALAR) {
      if (!scalar_arg(slot, v, c))
        return 0;
      continue;
    }
    if (kind != K_TORCH || *nkeys == MAX_TENSORS)
      return 0;
    PyObject *key = torch_arg(state, slot, v, c);
    if (!key)
      return 0;
    keys[(*nkeys)++] = key;
  }
  return 1;
}

// The stream to launch on: torch's current one, if the plan has seen it; else NULL.
static tl_stream stream_of(PyObject *state) {
  PyObject *raw = PyObject_CallFunctionObjArgs(PyTuple_GetItem(state, S_RAW_STREAM),
                                               PyTuple_GetItem(state, S_TORCH_INDEX), NULL);
  if (!raw)
    return PyErr_Clear(), NULL;
  PyObject *addr = PyDict_GetItemWithError(PyTuple_GetItem(state, S_STREAMS), raw);
  Py_DECREF(raw);
  if (!addr)
    return PyErr_Clear(), NULL;
  return (tl_stream)PyLong_AsVoidPtr(addr);
}

// The hot case of one plan: True after a launch, None for the Python plan, NULL on an error.
static PyObject *launch_plan(PyObject *state, PyObject *grid, PyObject *args, PyObject *kwargs,
                             PyObject *device, PyObject *target) {
  Py_ssize_t nargs = PyTuple_Size(args), nkw = PyTuple_Size(PyTuple_GetItem(state, S_KWNAMES));
  if (nargs != PyLong_AsSsize_t(PyTuple_GetItem(state, S_NARGS)) ||
      (kwargs == Py_None ? 0 : PyObject_Size(kwargs)) != nkw ||
      !equal(device, PyTuple_GetItem(state, S_DEVICE)) ||
      !equal(target, PyTuple_GetItem(state, S_TARGET)) || !PyTuple_Check(grid))
    Py_RETURN_NONE;
  PyObject *plan = PyTuple_GetItem(state, S_PLAN);
  PyObject *kept = PyObject_GetAttr(plan, s_grid); // the grid desc.grid holds
  int same_grid = kept && equal(grid, kept);
  Py_XDECREF(kept);
  if (!same_grid)
    return PyErr_Clear(), Py_NewRef(Py_None);
  // A Python plan launching in another thread (its cffi calls release the GIL) is busy with the
  // shared C arrays. This launcher never releases the GIL and runs no Python code before its
  // launch, so nothing else can start using them while it does.
  PyObject *busy = PyObject_GetAttr(plan, s_busy);
  const int idle = busy == Py_False;
  Py_XDECREF(busy);
  if (!idle)
    return PyErr_Clear(), Py_NewRef(Py_None);
  PyObject *keys[MAX_TENSORS], *result = Py_None;
  int nkeys = 0;
  PyObject *vals[64];
  for (Py_ssize_t i = 0; i < nargs && i < 64; ++i)
    vals[i] = PyTuple_GetItem(args, i);
  tl_stream stream = NULL;
  if (nargs <= 64 && fill(state, vals, nargs, kwargs, keys, &nkeys) &&
      (stream = stream_of(state)) != NULL) {
    PyObject *imports = PyTuple_GetItem(state, S_IMPORTS);
    for (int k = 0; k < nkeys; ++k) { // most recently used, as Device._import_device_tensor
      PyObject *r = PyObject_CallMethodObjArgs(imports, s_move_to_end, keys[k], NULL);
      Py_XDECREF(r);
    }
    launch_fn fn = (launch_fn)address(state, S_LAUNCH);
    tl_status st = fn(stream, (tl_executable)address(state, S_EXE), address(state, S_DESC));
    result = Py_True;
    if (st) { // the plan raises it as the Python path would
      PyObject *addr = PyLong_FromVoidPtr(st);
      PyObject *r = addr ? PyObject_CallMethodObjArgs(plan, s_raise_status, addr, NULL) : NULL;
      Py_XDECREF(addr);
      Py_XDECREF(r);
      result = NULL;
    } else if (PyObject_SetAttr(PyTuple_GetItem(state, S_DEV), s_copied_bytes, zero) < 0) {
      result = NULL;
    }
  }
  for (int k = 0; k < nkeys; ++k)
    Py_DECREF(keys[k]);
  if (result == Py_None && PyErr_Occurred())
    PyErr_Clear();
  return result ? Py_NewRef(result) : NULL;
}

static PyObject *launch(PyObject *self, PyObject *const *a, Py_ssize_t n) {
  (void)self;
  if (n != 6 || !PyTuple_Check(a[0]) || PyTuple_Size(a[0]) != S_COUNT || !PyTuple_Check(a[2])) {
    PyErr_SetString(PyExc_TypeError, "launch(state, grid, args, kwargs, device, target)");
    return NULL;
  }
  return launch_plan(a[0], a[1], a[2], a[3], a[4], a[5]);
}

// kernel[grid] (jit.Kernel.__getitem__ makes one while the C launcher is on): a call tries the
// kernel's most recent plan here, with no Python frame; anything else is kernel.run(grid, ...),
// which tries every plan again and is the reference.
typedef struct {
  PyObject_HEAD PyObject *kernel;
  PyObject *grid;
} Launcher;

static PyObject *s_plans, *s_c_state, *s_profiling, *s_launch_counts, *s_fast, *s_run, *s_device,
    *s_target, *s_timed;

// launch_counts["fast"] += 1, as Kernel.run counts a matched launch (also one that failed).
static int count_fast(PyObject *kernel) {
  PyObject *counts = PyObject_GetAttr(kernel, s_launch_counts);
  PyObject *n = counts ? PyDict_GetItemWithError(counts, s_fast) : NULL;
  int r = -1;
  if (n) {
    PyObject *next = PyLong_FromLongLong(PyLong_AsLongLong(n) + 1);
    r = next ? PyDict_SetItem(counts, s_fast, next) : -1;
    Py_XDECREF(next);
  }
  Py_XDECREF(counts);
  return r;
}

static PyObject *launcher_call(PyObject *self, PyObject *args, PyObject *kwargs) {
  Launcher *l = (Launcher *)self;
  int plain = !kwargs || (!PyDict_GetItemWithError(kwargs, s_device) &&
                          !PyDict_GetItemWithError(kwargs, s_target) &&
                          !PyDict_GetItemWithError(kwargs, s_timed));
  if (PyErr_Occurred())
    return NULL;
  PyObject *result = NULL; // launch_plan's: True, None or NULL (an error)
  int tried = 0;
  if (plain) {
    PyObject *profiling = PyObject_GetAttr(l->kernel, s_profiling);
    PyObject *plans = profiling == Py_False ? PyObject_GetAttr(l->kernel, s_plans) : NULL;
    PyObject *state = plans && PyList_Check(plans) && PyList_Size(plans) > 0
                          ? PyObject_GetAttr(PyList_GetItem(plans, 0), s_c_state)
                          : NULL;
    if (state && PyTuple_Check(state) && PyTuple_Size(state) == S_COUNT) {
      tried = 1;
      result = launch_plan(state, l->grid, args, kwargs ? kwargs : Py_None, Py_None, Py_None);
    }
    Py_XDECREF(state);
    Py_XDECREF(plans);
    Py_XDECREF(profiling);
    if (!tried)
      PyErr_Clear(); // a missing attribute: the Python path meets it
  }
  if (tried && (result == Py_True || result == NULL)) {
    PyObject *type = NULL, *value = NULL, *tb = NULL;
    PyErr_Fetch(&type, &value, &tb); // a failed launch is counted too
    const int counted = count_fast(l->kernel);
    if (type)
      PyErr_Restore(type, value, tb);
    if (!result || counted < 0)
      return NULL;
    Py_DECREF(result);
    Py_RETURN_NONE;
  }
  Py_XDECREF(result);
  PyObject *run = PyObject_GetAttr(l->kernel, s_run);
  const Py_ssize_t n = PyTuple_Size(args);
  PyObject *all = run ? PyTuple_New(n + 1) : NULL;
  if (!all) {
    Py_XDECREF(run);
    return NULL;
  }
  PyTuple_SetItem(all, 0, Py_NewRef(l->grid));
  for (Py_ssize_t i = 0; i < n; ++i)
    PyTuple_SetItem(all, i + 1, Py_NewRef(PyTuple_GetItem(args, i)));
  PyObject *r = PyObject_Call(run, all, kwargs);
  Py_DECREF(all);
  Py_DECREF(run);
  return r;
}

static void launcher_dealloc(PyObject *self) {
  Launcher *l = (Launcher *)self;
  PyTypeObject *type = Py_TYPE(self);
  Py_XDECREF(l->kernel);
  Py_XDECREF(l->grid);
  ((freefunc)PyType_GetSlot(type, Py_tp_free))(self);
  Py_DECREF(type);
}

static PyTypeObject *launcher_type;

static PyObject *make_launcher(PyObject *self, PyObject *const *a, Py_ssize_t n) {
  (void)self;
  if (n != 2) {
    PyErr_SetString(PyExc_TypeError, "launcher(kernel, grid)");
    return NULL;
  }
  Launcher *l = (Launcher *)PyType_GenericAlloc(launcher_type, 0);
  if (!l)
    return NULL;
  l->kernel = Py_NewRef(a[0]);
  l->grid = Py_NewRef(a[1]);
  return (PyObject *)l;
}

static PyType_Slot launcher_slots[] = {
    {Py_tp_call, launcher_call}, {Py_tp_dealloc, launcher_dealloc}, {0, NULL}};
static PyType_Spec launcher_spec = {"tl._tl_launch.Launcher", sizeof(Launcher), 0,
                                    Py_TPFLAGS_DEFAULT, launcher_slots};

static PyMethodDef methods[] = {
    {"launcher", (PyCFunction)(void (*)(void))make_launcher, METH_FASTCALL,
     "launcher(kernel, grid) -> kernel[grid] with the hot case of kernel.run in C"},
    {"launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL,
     "launch(state, grid, args, kwargs, device, target) -> True, or None for the Python plan"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_tl_launch", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__tl_launch(void) {
  s_dtype = PyUnicode_InternFromString("dtype");
  s_shape = PyUnicode_InternFromString("shape");
  s_get_device = PyUnicode_InternFromString("get_device");
  s_stride = PyUnicode_InternFromString("stride");
  s_data_ptr = PyUnicode_InternFromString("data_ptr");
  s_busy = PyUnicode_InternFromString("busy");
  s_move_to_end = PyUnicode_InternFromString("move_to_end");
  s_grid = PyUnicode_InternFromString("grid");
  s_copied_bytes = PyUnicode_InternFromString("copied_bytes");
  s_raise_status = PyUnicode_InternFromString("_raise_status");
  zero = PyLong_FromLong(0);
  s_plans = PyUnicode_InternFromString("_plans");
  s_c_state = PyUnicode_InternFromString("c_state");
  s_profiling = PyUnicode_InternFromString("profiling");
  s_launch_counts = PyUnicode_InternFromString("launch_counts");
  s_fast = PyUnicode_InternFromString("fast");
  s_run = PyUnicode_InternFromString("run");
  s_device = PyUnicode_InternFromString("device");
  s_target = PyUnicode_InternFromString("target");
  s_timed = PyUnicode_InternFromString("_timed");
  launcher_type = (PyTypeObject *)PyType_FromSpec(&launcher_spec);
  if (!launcher_type)
    return NULL;
  return PyModule_Create(&module);
}
