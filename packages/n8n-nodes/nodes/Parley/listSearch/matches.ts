/** Case-insensitive "contains" used by every searchable picker. */
export function matches(filter: string | undefined, ...texts: string[]): boolean {
	const needle = (filter ?? '').trim().toLowerCase();
	return needle === '' || texts.some((text) => text.toLowerCase().includes(needle));
}
