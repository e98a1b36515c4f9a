"""API tokens may expire; every existing token keeps working until revoked."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("api", "0003_operator_cancel"),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="expires_at",
            field=models.DateTimeField(
                blank=True, help_text="Empty: the token never expires.", null=True
            ),
        ),
    ]
