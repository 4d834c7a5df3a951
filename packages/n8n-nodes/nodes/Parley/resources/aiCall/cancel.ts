/** AI Call → Cancel: POST /ai-calls/{id}/cancel (only Queued calls scheduled > 30 s ahead). */
import { cancelAction } from '../../shared/actions';
import { aiCallKind } from './kind';

export const cancel = cancelAction(aiCallKind);
