import type { ActionKind } from '../../shared/actions';

export const aiCallKind: ActionKind = { path: 'ai-calls', idParameter: 'aiCallId', noun: 'AI call' };
