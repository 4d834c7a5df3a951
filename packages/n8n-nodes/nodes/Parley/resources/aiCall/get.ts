/** AI Call → Get: GET /ai-calls/{id} (the transcript is in `body` once completed). */
import { getAction } from '../../shared/actions';
import { aiCallKind } from './kind';

export const get = getAction(aiCallKind);
