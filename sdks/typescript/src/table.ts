/**
 * `Table`: a string-keyed map for the worker's per-job bookkeeping (running jobs, held leases), which sees an
 * insert and a delete for every job.
 *
 * Why not a `Map`, nor an object's properties: V8 rebuilds the backing table of both every few hundred inserts and
 * deletes (a delete leaves a hole, and holes force a rehash). Each rebuilt table is a new young object, alive at
 * the next young-generation collection, so it was copied and then promoted, and the old generation filled with dead
 * tables: on a 200,000-job drain, 75 MB promoted and 16 full collections with two `Map`s; with a null-prototype
 * object's dictionary, 11 MB and 8–11. Here the keys and values sit in two arrays of a fixed size (open
 * addressing, linear probing; a delete shifts the rest of its run back, so no hole is ever left), which are
 * replaced only when the table doubles: on the same drain, one full collection.
 */
export class Table<V> {
  #keys: (string | undefined)[];
  #values: (V | undefined)[];
  #size = 0;

  constructor(capacity = 1024) {
    const slots = 2 ** Math.ceil(Math.log2(Math.max(capacity, 8)));
    this.#keys = new Array<string | undefined>(slots).fill(undefined);
    this.#values = new Array<V | undefined>(slots).fill(undefined);
  }

  get size(): number {
    return this.#size;
  }

  get(key: string): V | undefined {
    const slot = this.#slot(key);
    return this.#keys[slot] === undefined ? undefined : this.#values[slot];
  }

  set(key: string, value: V): void {
    let slot = this.#slot(key);
    if (this.#keys[slot] === undefined) {
      // At most half full: a probe run stays short.
      if (2 * (this.#size + 1) > this.#keys.length) {
        this.#grow();
        slot = this.#slot(key);
      }
      this.#keys[slot] = key;
      this.#size += 1;
    }
    this.#values[slot] = value;
  }

  delete(key: string): void {
    let hole = this.#slot(key);
    if (this.#keys[hole] === undefined) return;
    this.#size -= 1;
    const mask = this.#keys.length - 1;
    // Move back every key of the run after the hole that may sit there (its home slot is not between the hole
    // and where it sits, cyclically), so that a lookup, which stops at the first empty slot, still finds it.
    for (let next = (hole + 1) & mask; ; next = (next + 1) & mask) {
      const key = this.#keys[next];
      if (key === undefined) break;
      const home = hash(key) & mask;
      if (((next - home) & mask) >= ((next - hole) & mask)) {
        this.#keys[hole] = key;
        this.#values[hole] = this.#values[next];
        hole = next;
      }
    }
    this.#keys[hole] = undefined;
    this.#values[hole] = undefined;
  }

  values(): V[] {
    return this.entries().map(([, value]) => value);
  }

  entries(): [string, V][] {
    const entries: [string, V][] = [];
    this.#keys.forEach((key, slot) => {
      if (key !== undefined) entries.push([key, this.#values[slot] as V]);
    });
    return entries;
  }

  /** Where `key` is, or the empty slot where it would go. */
  #slot(key: string): number {
    const mask = this.#keys.length - 1;
    let slot = hash(key) & mask;
    for (let found = this.#keys[slot]; found !== undefined && found !== key; found = this.#keys[slot]) {
      slot = (slot + 1) & mask;
    }
    return slot;
  }

  #grow(): void {
    const entries = this.entries();
    this.#keys = new Array<string | undefined>(2 * this.#keys.length).fill(undefined);
    this.#values = new Array<V | undefined>(this.#keys.length).fill(undefined);
    this.#size = 0;
    for (const [key, value] of entries) this.set(key, value);
  }
}

/** FNV-1a over the UTF-16 code units: job ids and lease tokens differ in their last characters, and this mixes them all. */
function hash(key: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < key.length; index++) {
    hash = Math.imul(hash ^ key.charCodeAt(index), 0x01000193);
  }
  return hash >>> 0;
}
