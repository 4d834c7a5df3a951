import type { ActionKind } from '../../shared/actions';
import { CALL_STATUSES } from '../../shared/statuses';

export const aiCallKind: ActionKind = { path: 'ai-calls', idParameter: 'aiCallId', noun: 'AI call', statuses: CALL_STATUSES };
