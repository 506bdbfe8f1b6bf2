// h5wasm2_io.mjs - HDF5 2.x (h5wasm 0.10.x, libhdf5 2.0 compiled to
// WebAssembly, an npm package) as the writer of fixtures and the reader of
// what h5fs wrote, for test_h5v2.py.
// Usage: node h5wasm2_io.mjs H5WASM_DIR make FILE LIBVER
//        node h5wasm2_io.mjs H5WASM_DIR dump FILE
//        node h5wasm2_io.mjs H5WASM_DIR more FILE DATASET...
// make writes the fixture (deterministic values, test_h5v2.py computes them
// too) with the library bounds LIBVER ("latest" = [v2.0, v2.0], or
// "default"); dump prints every dataset as JSON {"/path": {"shape",
// "dtype", "b64" (numeric values, little-endian bytes) or "values"}, with
// its attributes' values}, or {"/path": {"error": ...}} for one the library
// cannot read; groups as {"group": true} (the root with its attributes),
// soft links as {"soft": target}.
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [moddir, cmd, file, libver] = process.argv.slice(2);
const h5wasm = (await import(pathToFileURL(join(moddir, "dist/node/hdf5_hl.js")).href)).default;
const M = await h5wasm.ready;

function range(n, fn, Type) {
	const a = new Type(n);
	for (let i = 0; i < n; i++) a[i] = fn(i);
	return a;
}

function make() {
	const opts = libver === "latest" ? { libver: "latest" } : {};
	const f = new h5wasm.File(file, "w", opts);
	// every chunk index of layout version 4/5 over deflated chunks:
	// one unlimited dimension (extensible array), none (fixed array),
	// two (v2 B-tree), chunk = dataset (single chunk)
	f.create_dataset({ name: "ea", data: range(100, (i) => i, Int32Array), maxshape: [null], chunks: [16],
			   compression: "gzip" });
	f.create_dataset({ name: "fa", data: range(100, (i) => 3 * i, Int32Array), chunks: [16],
			   compression: "gzip" });
	f.create_dataset({ name: "bt2", data: range(64, (i) => 7 * i, Int32Array), shape: [8, 8],
			   maxshape: [null, null], chunks: [4, 4], compression: "gzip" });
	f.create_dataset({ name: "single", data: range(20, (i) => 5 * i, Int32Array), chunks: [20],
			   compression: "gzip" });
	// emptied and refilled through the mount (cat > d)
	f.create_dataset({ name: "ea_cut", data: range(50, (i) => i + 1, Int32Array), maxshape: [null], chunks: [8],
			   compression: "gzip" });
	// no chunk yet: h5fs makes the index (and under latest its entries)
	f.create_dataset({ name: "ea_empty", data: new Int32Array(0), shape: [0], maxshape: [null], chunks: [16],
			   compression: "gzip" });
	f.create_dataset({ name: "bt2_empty", data: new Int32Array(0), shape: [0, 4], maxshape: [null, null],
			   chunks: [4, 4], compression: "gzip" });
	// unfiltered, too: the index entries carry no size
	f.create_dataset({ name: "ea_plain", data: range(40, (i) => i * 0.5, Float64Array), maxshape: [null],
			   chunks: [8] });
	// a compound (datatype message version 5 under latest), a compound
	// attribute, dimension scales (REFERENCE_LIST is a compound attribute)
	const cmp = f.create_dataset({ name: "cmp", data: new Map([["a", [1, 2, 3]], ["b", [0.5, 1.5, -2.25]]]),
				       dtype: [["a", "<i4"], ["b", "<d"]] });
	cmp.create_attribute("pair", new Map([["x", [7]], ["y", [2.5]]]), [1], [["x", "<i2"], ["y", "<d"]]);
	const x = f.create_dataset({ name: "x", data: range(8, (i) => i * 10, Float64Array) });
	x.make_scale("x");
	const img = f.create_dataset({ name: "img", data: range(64, (i) => i, Uint16Array), shape: [8, 8] });
	img.attach_scale(0, "/x");
	img.attach_scale(1, "/x");
	// strings, attributes of the root, a group past the compact
	// link limit (dense storage, fractal heap and v2 B-trees)
	f.create_dataset({ name: "strs", data: ["ab", "cde", ""], dtype: "S4" });
	f.create_dataset({ name: "vstr", data: ["hello", "w\u00f6rld", "x"] });
	f.create_attribute("title", "HDF5 2.x fixture");
	f.create_attribute("scale", new Float32Array([0.5, 1.5, 2.5]));
	f.create_attribute("n", new Int32Array([54]), []);
	const g = f.create_group("many");
	for (let i = 0; i < 20; i++) g.create_group("g" + String(i).padStart(2, "0"));
	g.create_dataset({ name: "leaf", data: range(5, (i) => i * i, Uint8Array) });
	// object and region references (datatype class 7)
	f.create_dataset({ name: "refs", data: [x.create_reference(), img.create_reference()] });
	f.create_dataset({ name: "regions", data: [x.create_region_reference([[1, 4]])] });
	f.close();
}

function b64(v) {
	return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64");
}

function plain(v) {
	if (v === null || v === undefined) return null;
	if (typeof v === "bigint") return v.toString();
	if (ArrayBuffer.isView(v)) return Array.from(v, plain);
	if (Array.isArray(v)) return v.map(plain);
	if (typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
	if (typeof v === "number" && !Number.isFinite(v)) return String(v);
	return v;
}

function attrs(o) {
	const out = {};
	for (const [an, a] of Object.entries(o.attrs)) {
		try {
			out[an] = plain(a.value);
		} catch (e) {
			out[an] = { error: String(e) };
		}
	}
	return out;
}

function dump() {
	const f = new h5wasm.File(file, "r");
	const out = { "/": { group: true, attrs: attrs(f) } };
	const stack = ["/"];
	while (stack.length) {
		const gpath = stack.pop();
		const g = gpath === "/" ? f : f.get(gpath);
		for (const name of g.keys()) {
			const p = (gpath === "/" ? "" : gpath) + "/" + name;
			let soft = null;
			try {
				soft = f.get_link(p);
			} catch (e) {
				soft = null;
			}
			if (typeof soft === "string") {
				out[p] = { soft };
				continue;
			}
			const t = f.get_type(p);
			if (t === M.H5G_GROUP) {
				out[p] = { group: true };
				stack.push(p);
				continue;
			}
			if (t !== M.H5G_DATASET) continue;
			const d = {};
			try {
				const o = f.get(p);
				d.shape = o.shape;
				d.dtype = plain(o.dtype);
				const v = o.value;
				if (ArrayBuffer.isView(v)) d.b64 = b64(v);
				else d.values = plain(v);
				d.attrs = attrs(o);
			} catch (e) {
				d.error = String(e);
			}
			out[p] = d;
		}
	}
	f.close();
	process.stdout.write(JSON.stringify(out) + "\n");
}

// more: HDF5 2.x appends 16 elements (-1, -2, ...) to each of the
// one-dimensional datasets named after the file, and rewrites element 0:
// its reading of the indexes h5fs made or changed, and its writing into them
function more(names) {
	const f = new h5wasm.File(file, "a");
	for (const n of names) {
		const d = f.get(n);
		const len = Number(d.shape[0]);
		d.resize([len + 16]);
		d.write_slice([[len, len + 16]], range(16, (i) => -1 - i, Int32Array));
		d.write_slice([[0, 1]], new Int32Array([4242]));
	}
	f.close();
}

if (cmd === "make") make();
else if (cmd === "dump") dump();
else if (cmd === "more") more(process.argv.slice(5));
else {
	process.stderr.write("usage: node h5wasm2_io.mjs H5WASM_DIR make FILE LIBVER | dump FILE\n");
	process.exit(2);
}
