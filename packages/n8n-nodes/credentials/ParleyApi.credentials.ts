import type {
	IAuthenticateGeneric,
	Icon,
	ICredentialTestRequest,
	ICredentialType,
	INodeProperties,
} from 'n8n-workflow';

/** The "Parley API" credential: where the Parley server is and which organisation API key to use. */
export class ParleyApi implements ICredentialType {
	name = 'parleyApi';

	displayName = 'Parley API';

	icon: Icon = { light: 'file:../icons/parley.svg', dark: 'file:../icons/parley.dark.svg' };

	documentationUrl = 'https://github.com/parley/parley/tree/main/packages/n8n-nodes#credentials';

	properties: INodeProperties[] = [
		{
			// n8n answers a test that cannot connect with the bare network code; a
			// declarative test cannot change that message, so the advice sits here.
			displayName:
				'If the test says ECONNREFUSED, ENOTFOUND or ETIMEDOUT, n8n could not reach the Base URL: check that the Parley server is running, that the address and port are right, and that n8n can reach it (in Docker, localhost is the n8n container: use host.docker.internal or the service name).',
			name: 'connectionNotice',
			type: 'notice',
			default: '',
		},
		{
			displayName: 'Base URL',
			name: 'baseUrl',
			type: 'string',
			default: '',
			required: true,
			placeholder: 'https://parley.example.com',
			description:
				'Address of your Parley server, without the /api/v1 suffix (for example http://localhost:8787, the port Parley listens on by default)',
		},
		{
			displayName: 'API Key',
			name: 'apiKey',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			required: true,
			description:
				'Organisation API key created by a CRM administrator in Developer access. Keys starting with parley_test_… simulate sends and cancellations; parley_live_… keys act for real.',
		},
	];

	authenticate: IAuthenticateGeneric = {
		type: 'generic',
		properties: {
			headers: {
				Authorization: '=Bearer {{$credentials.apiKey}}',
			},
		},
	};

	// GET /numbers needs only resources:read. The rules turn Parley's answers into
	// messages that tell a wrong key from a wrong URL.
	test: ICredentialTestRequest = {
		request: {
			baseURL: '={{$credentials.baseUrl.replace(new RegExp("/+(api/v1/?)?$"), "")}}',
			url: '/api/v1/numbers',
			method: 'GET',
		},
		rules: [
			{
				type: 'responseCode',
				properties: {
					value: 401,
					message:
						'Parley rejected the API key (invalid, revoked or expired). The Base URL is right; check the key.',
				},
			},
			{
				type: 'responseCode',
				properties: {
					value: 403,
					message:
						'The API key works but may not read numbers: give it the resources:read scope, or check the subscription.',
				},
			},
			{
				type: 'responseCode',
				properties: {
					value: 404,
					message:
						'No Parley API answered at this Base URL. Use the server address without /api/v1.',
				},
			},
		],
	};
}
