import type { ActionRecord, RecordStatus } from '@parley/core';
export type Probe = Pick<ActionRecord, 'id' | 'status'>;
export const s: RecordStatus = 'Queued';
