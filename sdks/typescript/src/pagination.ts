import type { Page } from "./types.js";

/** Walk a cursor-paginated list lazily: the next page is fetched only when the current one is used up. */
export async function* paginate<T>(page: (cursor: string | undefined) => Promise<Page<T>>): AsyncIterableIterator<T> {
  let cursor: string | undefined;
  do {
    const current = await page(cursor);
    yield* current.items;
    cursor = current.next_cursor ?? undefined;
  } while (cursor !== undefined);
}
