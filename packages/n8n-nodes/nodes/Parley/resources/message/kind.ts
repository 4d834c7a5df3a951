import type { ActionKind } from '../../shared/actions';

export const messageKind: ActionKind = { path: 'messages', idParameter: 'messageId', noun: 'message' };
