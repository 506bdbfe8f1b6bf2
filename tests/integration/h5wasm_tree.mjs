// h5wasm_tree.mjs FILE - what libhdf5 1.14 (h5wasm 0.8.x, libhdf5 1.14.6
// compiled to WebAssembly, an npm package: the second oracle beside the
// Debian libhdf5 1.10 of h5py) reads in FILE, as one JSON document:
// {"/path": {"kind": "group"|"dataset"|"soft"|"external", ...}}, with a
// dataset's shape, its numeric values' SHA-256 (little-endian bytes) or
// its values, and every object's attributes. h5fs_testlib.h514_tree runs
// it and compares with the same walk through h5py.
// Usage: node h5wasm_tree.mjs H5WASM_DIR FILE
import { createHash } from "node:crypto";
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [moddir, file] = process.argv.slice(2);
const h5wasm = (await import(pathToFileURL(join(moddir, "dist/node/hdf5_hl.js")).href)).default;
const M = await h5wasm.ready;

function plain(v) {
	if (v === null || v === undefined) return null;
	if (typeof v === "bigint") return v.toString();
	if (ArrayBuffer.isView(v)) return Array.from(v, plain);
	if (Array.isArray(v)) return v.map(plain);
	if (typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
	if (typeof v === "number" && !Number.isFinite(v)) return String(v);
	return v;
}

function flat(v) {
	if (Array.isArray(v)) return v.flatMap(flat);
	return [v];
}

function attrs(obj) {
	const out = {};
	for (const [name, a] of Object.entries(obj.attrs)) {
		try {
			out[name] = flat(plain(a.value));
		} catch (e) {
			out[name] = { error: String(e) };
		}
	}
	return out;
}

function tryget(fn) {
	try {
		return fn();
	} catch (e) {
		return null;
	}
}

const f = new h5wasm.File(file, "r");
const tree = {};
tree["/"] = { kind: "group", attrs: attrs(f) };
const stack = ["/"];
const seen = new Set();
while (stack.length) {
	const gpath = stack.pop();
	const g = gpath === "/" ? f : f.get(gpath);
	for (const name of g.keys()) {
		const p = (gpath === "/" ? "" : gpath) + "/" + name;
		// get_type follows a soft link that resolves: ask for the link first
		const soft = tryget(() => f.get_link(p));
		if (typeof soft === "string") {
			tree[p] = { kind: "soft", target: soft };
			continue;
		}
		const ext = tryget(() => f.get_external_link(p));
		if (ext && typeof ext === "object" && ext.filename !== undefined) {
			tree[p] = { kind: "external", target: plain(ext) };
			continue;
		}
		const t = f.get_type(p);
		const o = f.get(p);
		if (t === M.H5G_GROUP) {
			tree[p] = { kind: "group", attrs: attrs(o) };
			stack.push(p);
		} else if (t === M.H5G_DATASET) {
			const d = { kind: "dataset", shape: o.shape, attrs: attrs(o) };
			try {
				const v = o.value;
				if (ArrayBuffer.isView(v)) {
					d.nbytes = v.byteLength;
					d.sha256 = createHash("sha256").update(new Uint8Array(v.buffer, v.byteOffset, v.byteLength)).digest("hex");
				} else {
					d.values = flat(plain(v));
				}
			} catch (e) {
				d.error = String(e);
			}
			tree[p] = d;
		} else {
			tree[p] = { kind: "other", type: t };
		}
	}
}
f.close();
process.stdout.write(JSON.stringify(tree) + "\n");
